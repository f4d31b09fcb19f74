# Sourced from the repository root by the scripts run on the device machine (gpu_check.sh, gpu_history.sh,
# gpu_heldout.sh, gpu_two_clocks.sh, ...): installs wheels carried in .whl/ (packages the device image lacks)
# into /tmp/site and puts them and this checkout on PYTHONPATH.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
