#!/usr/bin/env bash
# The container-image A/B bar with the stand-in runtime (tests/tools/fake_container_runtime.py; these machines have
# no container daemon): image `slow` makes the workload do 20% more work. Prints the A/B's and the A/A's exit codes,
# times and verdicts, how many containers ran with stdin attached and a mount, and how many are left running.
# Usage, from the repository root: bash benchmarks/ab_images_bar.sh
set -u
ROOT=$(pwd); T=$(mktemp -d); RT="$ROOT/tests/tools/fake_container_runtime.py"
export PERFCI_FAKE_RUNTIME_DIR="$T/runtime"; mkdir -p "$PERFCI_FAKE_RUNTIME_DIR"
python3 - "$PERFCI_FAKE_RUNTIME_DIR/images.json" "$(dirname "$(command -v python)")" <<'PY'
import json, sys
path = f"{sys.argv[2]}:/usr/bin:/bin"
json.dump({"base": {"env": {"PATH": path}}, "slow": {"env": {"PATH": path, "WORK_SCALE": "1.2"}}}, open(sys.argv[1], "w"))
PY
git init -q "$T/r" && cd "$T/r" && git config user.email bench@perfci && git config user.name bench && mkdir perf
cat > perf/wl.py <<'PY'
import os

import perfci

SCALE = float(os.environ.get("WORK_SCALE", "1"))  # set by the image


@perfci.workload(params={"n": [3000]})
def loop(ctx, n):
    m = int(n * SCALE)

    def work():
        s = 0
        for i in range(m):
            s += i
        return s

    return work
PY
git add -A && git commit -qm workload
/usr/bin/time -f "%e s" perfci ab --base-image base --head-image slow --container-runtime "$RT" -k loop > b.txt 2> be.txt
echo "base -> slow: exit $? in $(tail -1 be.txt)"; grep latency.median b.txt
/usr/bin/time -f "%e s" perfci ab --base-image base --head-image base --container-runtime "$RT" -k loop > a.txt 2> ae.txt
echo "base -> base: exit $? in $(tail -1 ae.txt)"; grep latency.median a.txt
python3 - "$PERFCI_FAKE_RUNTIME_DIR/log.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
runs = [r for r in rows if r.get("command") == "run"]
print(f"{len(runs)} containers run, {sum(1 for r in runs if r.get('interactive'))} with -i, "
      f"{sum(1 for r in runs if r.get('mounts'))} with mounts; {sum(1 for r in rows if r.get('command') == 'kill')} kills")
PY
echo "containers left running: $(ls "$PERFCI_FAKE_RUNTIME_DIR/containers" 2>/dev/null | wc -l)"
