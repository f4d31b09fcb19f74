"""A workload whose set-up imports a standard-library module perfci never imports (`colorsys`), and notes whether
it was already imported when the set-up began: the lockstep test of perfci/engine/preload.py (a spare worker
imports what the first pair's set-ups imported)."""

import sys

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.05, "min_sample_s": 0.0005}


@perfci.workload(timing=FAST)
def imports_colorsys(ctx):
    ctx.notes["colorsys_before_setup"] = "colorsys" in sys.modules
    import colorsys

    rgb = (0.2, 0.4, 0.6)

    def call():
        return colorsys.rgb_to_hsv(*rgb)

    return call
