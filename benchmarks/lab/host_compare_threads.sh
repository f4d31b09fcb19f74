source benchmarks/device_env.sh
w=$(mktemp -d)
python3 benchmarks/scale.py --sizes 5000 --repeats 1 --no-browser --keep $w >/dev/null 2>&1
cd $w; ls
t() { /usr/bin/time -f "%e s wall, %U user, %S sys" "$@" >/dev/null 2>>/tmp/t.err; tail -1 /tmp/t.err; }
for i in 1 2; do
echo "default:"; t python3 -m perfci compare base-5000.json cand-5000.json --exit-zero --format json
echo "OPENBLAS_NUM_THREADS=1:"; OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 t python3 -m perfci compare base-5000.json cand-5000.json --exit-zero --format json
echo "taskset -c 0:"; t taskset -c 0 python3 -m perfci compare base-5000.json cand-5000.json --exit-zero --format json
done
python3 -c "import numpy; numpy.show_config()" 2>&1 | grep -i -A3 "blas" | head -12
python3 - <<'P'
import time,threading
t=time.process_time(); w=time.perf_counter()
from scipy import special
print('scipy.special import: cpu %.2f wall %.2f threads %d'%(time.process_time()-t, time.perf_counter()-w, threading.active_count()))
import os; print(len(os.listdir('/proc/self/task')),'OS threads')
P
