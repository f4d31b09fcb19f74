"""Sweep charts of real runs in a real browser: `perfci run` on the built-in default suite and on the
kernels suite (CPU; two real sweeps: matmul by size and dtype, gelu_chain by implementation), and a second
kernels run compared with the first. Each report.html is opened in headless Chromium (the set-up and the
skip rules of tests/integration/test_report_browser.py); there must be no console or page error, every sweep
chart must draw its points, and the star must sit on the configuration with the best median, which the test
works out by itself from results.json (not through perfci/reports/sweeps.py).

Short sampling (2 rounds, 0.1 s per case and round) keeps the three runs to about a minute on a 2-core VM; the
best configuration of a noisy run is still whatever that run measured, which is what the star must show.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_report_browser import Page, artifacts_dir, browser  # noqa: F401  (browser: fixture)

pytestmark = pytest.mark.integration

SHORT = ("--rounds", "2", "--round-time", "0.1", "--exit-zero")
# the whole kernels suite on CPU (11 cases); two of its workloads sweep: matmul (n=256/512 x float32/bfloat16,
# 3 cases; bf16 at 512 is skipped) and gelu_chain (unfused/fused; compiled is opt-in on CPU)
KERNELS = ("--suite", "kernels", "--device", "cpu")
BATCH_PARAMS = ("batch", "batch_size", "bs")  # docs/reports.md: a sweep with one of these is per item
TIME_SCALE = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
DASH = "\u2014"


def perfci_run(cwd: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # cwd: an empty folder, so that no baselines/<runner>.json of the repository is picked up
    proc = subprocess.run(
        [sys.executable, "-m", "perfci", "run", *args, *SHORT, "--out", str(out)],
        cwd=cwd, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "results.json").is_file() and (out / "report.html").is_file()
    return proc


@dataclass(frozen=True)
class Runs:
    default: Path
    kernels: Path  # kernels suite, first run
    again: Path  # kernels suite, second run, compared with the first (--baseline)
    kernels_json: dict[str, Any]  # what `perfci run --format json` printed for the first kernels run


@pytest.fixture(scope="module")
def runs(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:  # noqa: F811
    """The three real runs, made once (after the browser fixture, so a skipped browser costs no measuring)."""
    cwd = tmp_path_factory.mktemp("sweeps")
    perfci_run(cwd, cwd / "default", "--suite", "default")
    printed = perfci_run(cwd, cwd / "kernels", *KERNELS, "--format", "json").stdout
    perfci_run(cwd, cwd / "again", *KERNELS, "--baseline", str(cwd / "kernels" / "results.json"))
    yield Runs(cwd / "default", cwd / "kernels", cwd / "again", json.loads(printed))


# ---- the expected sweeps, worked out from results.json alone ----


def median(case: dict[str, Any]) -> float | None:
    return next((m["value"] for m in case["metrics"] if m["name"] == "latency.median"), None)


def batch_of(cases: list[dict[str, Any]]) -> str | None:
    for name in BATCH_PARAMS:
        values = [c["params"].get(name) for c in cases]
        if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
            return name
    return None


@dataclass(frozen=True)
class Expected:
    key: str  # workload@device
    swept: list[str]
    cases: list[dict[str, Any]]
    best: dict[str, Any] | None  # the OK case with the best median (per item when the workload has a batch)


def expected_sweeps(results: Path) -> dict[str, Expected]:
    doc = json.loads(results.read_text())
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in doc["cases"]:
        groups.setdefault(f"{c['workload']}@{c['device']}", []).append(c)
    out = {}
    for key, cases in groups.items():
        names = list(dict.fromkeys(k for c in cases for k in c["params"]))
        swept = [n for n in names if len({json.dumps(c["params"][n]) for c in cases if n in c["params"]}) > 1]
        if not swept:
            continue
        batch = batch_of(cases)
        per_item = {
            c["id"]: m / (c["params"][batch] if batch else 1)
            for c in cases
            if c["status"] == "ok" and (m := median(c)) is not None
        }
        best = min((c for c in cases if c["id"] in per_item), key=lambda c: per_item[c["id"]], default=None)
        out[key] = Expected(key, swept, cases, best)
    return out


def others(params: dict[str, Any], name: str) -> str:
    """The legend name of a case's line in the chart by `name`: its other parameters."""
    return ", ".join(f"{k}={v}" for k, v in params.items() if k != name) or "all"


# ---- what the browser shows ----


def chart(page: Page) -> dict[str, Any]:
    """The drawn sweep chart: its traces, its y-axis title and the number of marker points in the SVG."""
    return page.page.evaluate(
        """() => {
          const gd = document.getElementById('chart-sweep');
          return {
            traces: gd.data.map(t => ({name: t.name, x: Array.from(t.x), y: Array.from(t.y), mode: t.mode,
                                       symbol: t.marker && t.marker.symbol, dash: t.line && t.line.dash})),
            ytitle: gd.layout.yaxis.title.text,
            points: gd.querySelectorAll('.scatterlayer .trace .points path.point').length,
          };
        }"""
    )


def drawn_value(ytitle: str, case: dict[str, Any]) -> tuple[float, bool]:
    """What the chart should show for `case`, worked out from its median alone, in the chart's unit, and whether
    lower is better: "latency.median (ms, lower is better)", or "throughput (items/s, higher is better)" for a
    workload with a batch (items per second = batch / median time per call)."""
    m = median(case)
    assert m is not None
    if ytitle == "throughput (items/s, higher is better)":
        batch = batch_of([case])
        assert batch is not None, case["params"]
        return case["params"][batch] / m, False
    assert ytitle.startswith("latency.median (") and ytitle.endswith(", lower is better)"), ytitle
    return m / TIME_SCALE[ytitle.split("(", 1)[1].split(",", 1)[0]], True


def check_star(drawn: dict[str, Any], exp: Expected, name: str, suffix: str) -> None:
    """The star of one side sits on `exp.best`: at its value of `name`, on its line, at its median."""
    assert exp.best is not None
    stars = [t for t in drawn["traces"] if t["name"] == "best" + suffix]
    assert len(stars) == 1, [t["name"] for t in drawn["traces"]]
    star = stars[0]
    assert star["symbol"] == ("star-open" if suffix == " (baseline)" else "star") and len(star["x"]) == 1
    x, y = star["x"][0], star["y"][0]
    assert x == str(exp.best["params"][name])
    want, lower_is_better = drawn_value(drawn["ytitle"], exp.best)
    assert y == pytest.approx(want, rel=1e-3)  # four significant digits in the page
    line = next(t for t in drawn["traces"] if t["name"] == others(exp.best["params"], name) + suffix)
    assert line["y"][line["x"].index(x)] == y
    side = [v for t in drawn["traces"] if t["mode"] == "lines+markers" and t["name"].endswith(suffix) for v in t["y"]]
    best_drawn = (min if lower_is_better else max)(v for v in side if v is not None)
    assert y == best_drawn  # no drawn point of this side is better


def check_sweep_charts(page: Page, sweeps: dict[str, Expected], base: dict[str, Expected] | None, shot: str) -> int:
    """Every sweep chart of the page against the expected sweeps; returns how many charts were checked."""
    assert page.problems == [] and page.network() == []
    if not sweeps:
        assert page.page.locator("#sweep-block").is_hidden()
        assert page.page.evaluate("JSON.parse(document.getElementById('perfci-data').textContent).sweep") is None
        return 0
    assert page.page.locator("#sweep-block").is_visible()
    options = page.page.eval_on_selector_all("#sweep-pick option", "os => os.map(o => o.textContent)")
    assert options == [f"{s.key} {DASH} by {p}" for s in sweeps.values() for p in s.swept]
    suffix = " (candidate)" if base is not None else ""
    for label in options:
        key, name = label.split(f" {DASH} by ")
        page.page.select_option("#sweep-pick", label=label)
        drawn = chart(page)
        assert page.page.locator("#chart-sweep .main-svg").count() > 0
        values = [v for t in drawn["traces"] for v in t["y"] if v is not None]
        assert drawn["points"] == len(values) > 0  # every value drawn as a marker, stars included
        exp = sweeps[key]
        lines = [t for t in drawn["traces"] if t["mode"] == "lines+markers" and t["name"].endswith(suffix)]
        measured = [c for c in exp.cases if c["status"] == "ok" and name in c["params"]]
        assert sum(v is not None for t in lines for v in t["y"]) == len(measured) >= 2
        assert all(t["dash"] == "solid" for t in lines)
        check_star(drawn, exp, name, suffix)
        if base is not None:
            baseline = [
                t for t in drawn["traces"] if t["mode"] == "lines+markers" and t["name"].endswith(" (baseline)")
            ]
            assert baseline and all(t["dash"] == "dot" for t in baseline)
            check_star(drawn, base[key], name, " (baseline)")
            # the candidate's star is drawn last, on top of the baseline's: visible when both mark one point
            assert drawn["traces"][-1]["name"] == "best (candidate)"
        page.page.locator("#sweep-block").screenshot(path=str(artifacts_dir() / f"{shot}-{key}-{name}.png"))
    assert page.problems == []
    return len(options)


def test_default_suite_report_in_browser(browser: Any, runs: Runs) -> None:  # noqa: F811
    """The default suite's report: no console error, and a sweep chart for each workload whose parameters sweep
    (the mlp's batch size), with the best configuration marked where the best median per item is."""
    sweeps = expected_sweeps(runs.default / "results.json")
    assert set(sweeps) == {"default.mlp@cpu"}
    assert sweeps["default.mlp@cpu"].swept == ["batch"] and len(sweeps["default.mlp@cpu"].cases) == 2
    assert sweeps["default.mlp@cpu"].best is not None
    assert {c["workload"] for c in json.loads((runs.default / "results.json").read_text())["cases"]} >= {
        "default.matmul", "default.softmax", "default.mlp", "default.layernorm",
    }  # fmt: skip
    page = Page(browser, runs.default / "report.html")
    try:
        check_sweep_charts(page, sweeps, None, "sweep-default")
    finally:
        page.close()


def test_kernels_suite_sweeps_in_browser(browser: Any, runs: Runs) -> None:  # noqa: F811
    sweeps = expected_sweeps(runs.kernels / "results.json")
    assert set(sweeps) == {"kernels.matmul@cpu", "kernels.gelu_chain@cpu"}
    assert sweeps["kernels.matmul@cpu"].swept == ["n", "dtype"] and len(sweeps["kernels.matmul@cpu"].cases) == 3
    assert sweeps["kernels.gelu_chain@cpu"].swept == ["impl"]
    assert all(s.best is not None and batch_of(s.cases) is None for s in sweeps.values())
    # `perfci run --format json` names the same best configurations
    printed = {f"{s['workload']}@{s['device']}": s for s in runs.kernels_json["sweeps"]}
    assert {k: p["best"]["case"] for k, p in printed.items()} == {
        k: (s.best or {}).get("id") for k, s in sweeps.items()
    }
    page = Page(browser, runs.kernels / "report.html")
    try:
        assert check_sweep_charts(page, sweeps, None, "sweep-kernels") == 3  # matmul by n, by dtype; gelu by impl
    finally:
        page.close()


def test_kernels_comparison_sweeps_in_browser(browser: Any, runs: Runs) -> None:  # noqa: F811
    """The second kernels run against the first: both sides' lines (candidate solid, baseline dotted), each
    side's star on that side's best median."""
    cand, base = expected_sweeps(runs.again / "results.json"), expected_sweeps(runs.kernels / "results.json")
    assert set(cand) == set(base) == {"kernels.matmul@cpu", "kernels.gelu_chain@cpu"}
    page = Page(browser, runs.again / "report.html")
    try:
        assert page.page.inner_text("#verdict")  # a comparison: the verdict line is shown
        assert check_sweep_charts(page, cand, base, "sweep-kernels-cmp") == 3
    finally:
        page.close()
