"""Report figures for docs/reports.md: HTML size and browser render time, Markdown length.

    python -m benchmarks.report_bench [RESULTS.json ...]

Synthetic comparisons (tests/report_fixtures.py: 500 cases with GPU telemetry and peaks, 3 metrics per case)
plus any results files given (e.g. a real default-suite run). Render times need Chromium and playwright.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from perfci.reports.html import render_html
from perfci.reports.markdown import render_markdown
from perfci.schema import load_results
from tests.integration.test_report_browser import CHROMIUM_ARGS
from tests.report_fixtures import suite_comparison
from tests.unit.test_report_markdown import synthetic


def browser_times(paths: list[Path], repeats: int = 3) -> dict[Path, list[tuple[float, float]]]:
    from playwright.sync_api import sync_playwright

    out: dict[Path, list[tuple[float, float]]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        for path in paths:
            for _ in range(repeats):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                start = time.perf_counter()
                page.goto(path.as_uri())
                page.wait_for_selector("body[data-ready='1']", timeout=60_000)
                ready = time.perf_counter() - start
                page.evaluate("window.perfciDrawAll()")
                out.setdefault(path, []).append((ready, time.perf_counter() - start))
                page.close()
        browser.close()
    return out


def main(argv: list[str]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="perfci-report-bench-"))
    pages: dict[str, Path] = {}
    for n in (500, 1000):
        base, cand, comp = suite_comparison(n, telemetry=True)
        start = time.perf_counter()
        html = render_html(cand, comp, base)
        took = time.perf_counter() - start
        pages[f"{n}-case comparison ({len(comp.rows)} rows), rendered in {took:.2f} s"] = folder / f"cmp{n}.html"
        (folder / f"cmp{n}.html").write_text(html, "utf-8")
    for arg in argv:
        run = load_results(Path(arg))
        path = folder / f"run-{len(pages)}.html"
        path.write_text(render_html(run, None), "utf-8")
        pages[f"{arg} ({len(run.cases)} cases)"] = path
    for label, path in pages.items():
        print(f"{label}: {path.stat().st_size:,} bytes")
    for n in (500, 5000, 50_000):
        md = render_markdown(None, synthetic(n))
        print(f"Markdown summary, {n:,}-case comparison: {len(md):,} characters")
    if shutil.which("chromium"):
        for path, times in browser_times(list(pages.values())).items():
            label = next(k for k, v in pages.items() if v == path)
            ready = ", ".join(f"{r:.2f}" for r, _ in times)
            drawn = ", ".join(f"{a:.2f}" for _, a in times)
            print(f"{label}: ready {ready} s; all charts drawn {drawn} s")


if __name__ == "__main__":
    main(sys.argv[1:])
