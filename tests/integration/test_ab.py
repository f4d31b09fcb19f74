"""`perfci ab` for real: a temp git repo with two commits of a tiny pure-Python workload file (no torch, so
workers start fast), worktrees, paired rounds in worker processes, exit codes, outputs, clean-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SERIAL = pytest.mark.serial  # on the tests that assert verdicts or time-outs of real measurements: run alone (README)

WORKLOAD = """
import perfci
import helper

FAST = {{"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}}


@perfci.workload(params={{"which": ["same", "changed"]}}, timing=FAST)
def loop(ctx, which):
    k = helper.K if which == "same" else {changed}

    def f():
        s = 0
        for i in range(k):
            s += i
        return s

    return f
"""


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return out.stdout


def perfci(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfci", *args], cwd=repo, capture_output=True, text=True, timeout=240
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "perf").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@t")
    git(repo, "config", "user.name", "t")
    (repo / "helper.py").write_text("K = 3000\n")  # project code the workload imports: must come from each side
    (repo / "perf" / "wl.py").write_text(WORKLOAD.format(changed="helper.K"))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "v1")
    (repo / "perf" / "wl.py").write_text(WORKLOAD.format(changed="helper.K * 3"))  # 3x the work
    git(repo, "commit", "-qam", "v2")
    return repo


@SERIAL
def test_ab_flags_the_slower_case(repo: Path) -> None:
    out = repo / "out"
    args = ("ab", "HEAD~1", "HEAD", "--path", "perf", "--pairs", "4", "--looks", "1", "--out", str(out))
    proc = perfci(repo, *args, "--pairs-at-once", "2", "--format", "json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads((out / "comparison.json").read_text())
    assert doc["mode"] == "paired"
    rows = {r["case_id"]: r for r in doc["rows"] if r["metric"] == "latency.median"}
    changed, same = rows["wl.loop[which=changed]@cpu"], rows["wl.loop[which=same]@cpu"]
    assert changed["verdict"] == "regression" and 2.0 < changed["ratio"] < 4.5
    # the unchanged case is nowhere near the 3x: on a loaded 2-core machine a bias of a few percent between the
    # sides has been seen, once named `regression` at 3 pairs (docs/reliability.md, "Left as they are")
    assert same["ratio"] < 1.10, same
    assert changed["method"] == "paired" and changed["n_baseline"] == 4
    assert len(doc["settings"]["ab"]["pair_order"]) == 4
    assert doc["settings"]["ab"]["pair_blocks"] == [1, 2, 1]  # the first pair alone, then two set up together
    # pairs 2-4 used workers started while the block before finished; none is started after the last block
    # of the last look (--looks 1)
    assert doc["settings"]["ab"]["workers_started_ahead"] == 6
    assert not (out / "base" / "logs" / "worker-r4-A.log").exists()
    phases = doc["settings"]["ab"]["phases_s"]  # where the wall time went: every phase there, none negative
    assert {"listing", "fingerprint", "start", "sampling", "finish", "analysis", "other"} <= set(phases)
    assert min(phases.values()) >= -0.01 and phases["start"] > phases["analysis"] > 0
    assert doc["baseline"]["git"]["commit"] == git(repo, "rev-parse", "HEAD~1").strip()
    assert (out / "base" / "results.json").exists() and (out / "junit.xml").exists()
    assert git(repo, "worktree", "list").count("\n") == 1  # temporary worktrees removed


@SERIAL
def test_ab_working_tree_head_and_project_code_per_side(repo: Path) -> None:
    # uncommitted edit in the working tree: the project module is 3x bigger on the head side only
    (repo / "helper.py").write_text("K = 9000\n")
    out = repo / "out2"
    proc = perfci(repo, "ab", "HEAD", "--path", "perf", "--pairs", "4", "--looks", "1", "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = json.loads((out / "comparison.json").read_text())["rows"]
    same = next(r for r in rows if r["case_id"] == "wl.loop[which=same]@cpu" and r["metric"] == "latency.median")
    assert same["verdict"] == "regression" and same["ratio"] > 2.0  # helper.K came from each side's own code
    assert "working tree" in proc.stdout


@SERIAL
def test_ab_budget_bounds_the_first_look(repo: Path) -> None:
    """Before: the first look's pairs always ran (a 10 s budget took 31 s). Now, past the budget, no further pair
    starts once two are in, and the comparison says how many of the look's pairs ran."""
    out = repo / "out"
    proc = perfci(repo, "ab", "HEAD", "--path", "perf", "--pairs", "12", "--budget", "1", "--out", str(out))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    doc = json.loads((out / "comparison.json").read_text())
    ab = doc["settings"]["ab"]
    assert 2 <= ab["pairs_run"] < 12 and ab["look_pairs"] == [ab["pairs_run"]] and ab["looks_run"] == 1, ab
    assert f"time budget reached: {ab['pairs_run']} of the look's 12 pairs ran, no further look" in doc["warnings"]
    assert "time budget reached" in proc.stderr + proc.stdout


def test_ab_bad_revision_is_a_usage_error(repo: Path) -> None:
    proc = perfci(repo, "ab", "no-such-branch", "--path", "perf")
    assert proc.returncode == 2
    assert "not a revision" in proc.stderr and "Traceback" not in proc.stderr


def test_ab_and_ci_refuse_a_workload_path_at_neither_revision(repo: Path) -> None:
    """A typo among the paths was dropped without a word and the A/B of the others passed (a user audit)."""
    for args in (
        ["ab", "HEAD~1", "--path", "perf/wl.py", "--path", "perf/typo.py"],
        ["ab", "HEAD~1", "--", "perf/wl.py", "perf/typo.py"],
        ["ci", "--base", "HEAD~1", "--path", "perf/wl.py", "--path", "perf/typo.py"],
    ):
        proc = perfci(repo, *args)
        assert proc.returncode == 2, (args, proc.stderr[-1500:])
        assert "perf/typo.py: no such workload file or folder at either revision." in proc.stderr, proc.stderr


def test_ab_names_the_side_whose_cases_cannot_be_listed(repo: Path) -> None:
    """Both sides are listed at once; a workload file that does not compile on the head side stops the A/B with
    one line naming that side and the file (exit 2), whatever the base side's listing did."""
    (repo / "perf" / "wl.py").write_text("def broken(:\n")
    proc = perfci(repo, "ab", "HEAD", "--path", "perf", "--out", str(repo / "o4"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot list the cases of working tree" in proc.stderr and "wl.py:1: syntax error" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ab_a_file_broken_at_head_is_error_rows_and_the_others_are_compared(repo: Path) -> None:
    """A pull request that breaks one workload file's import: that file's cases are `error` rows naming the
    import error (exit 3), and the other files are still measured and compared; no data of theirs is lost."""
    other = "import perfci\n\n\n@perfci.workload()\ndef other(ctx):\n    return lambda: sum(range(3000))\n"
    (repo / "perf" / "two.py").write_text(other)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "v3")
    (repo / "perf" / "two.py").write_text("import no_such_module\n" + other)
    out = repo / "o5"
    proc = perfci(repo, "ab", "HEAD", "--path", "perf", "--pairs", "2", "--looks", "1", "--out", str(out))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    rows = json.loads((out / "comparison.json").read_text())["rows"]
    broken = [r for r in rows if r["case_id"] == "two.other@cpu"]
    assert [r["verdict"] for r in broken] == ["error"], broken
    assert "working tree" in broken[0]["note"] and "no_such_module" in broken[0]["note"]
    measured = {r["case_id"] for r in rows if r["metric"] == "latency.median" and r["verdict"] != "error"}
    assert measured == {"wl.loop[which=same]@cpu", "wl.loop[which=changed]@cpu"}
    head = json.loads((out / "head" / "results.json").read_text())
    assert {c["id"]: c["status"] for c in head["cases"]}["two.other@cpu"] == "error"

    (repo / "perf" / "two.py").write_text("import no_such_module\n")  # broken at base too: nothing to compare
    git(repo, "commit", "-qam", "v4")
    proc = perfci(repo, "ab", "HEAD", "--path", "perf", "--out", str(repo / "o6"))
    assert proc.returncode == 2 and "cannot list the cases of either revision" in proc.stderr, proc.stderr


HOG = """
import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}


@perfci.workload(timing=FAST)
def hog(ctx):
    held = bytearray(400 * 2**20)
    for i in range(0, len(held), 4096):
        held[i] = 1
    import time
    time.sleep(1.0)  # the supervisor polls every 0.1 s
    return lambda: len(held)
"""


@SERIAL
def test_ab_holds_workers_to_the_memory_limit(repo: Path) -> None:
    """$PERFCI_MEMORY_LIMIT (and --memory-limit) bound an A/B's workers too: a case that takes 400 MiB under a
    200 MiB limit is an `oom` error (exit 3) on both sides, and the other cases are still measured."""
    (repo / "perf" / "hog.py").write_text(HOG)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "hog")
    env = {**os.environ, "PERFCI_MEMORY_LIMIT": "200MiB"}
    args = [
        "ab",
        "HEAD",
        "--path",
        "perf",
        "--pairs",
        "2",
        "--looks",
        "1",
        "--threshold",  # this test is about the limit: two pairs of the unchanged cases must not decide the exit
        "50%",
        "--out",
        str(repo / "o5"),
        "--format",
        "json",
    ]
    proc = subprocess.run([sys.executable, "-m", "perfci", *args], cwd=repo, capture_output=True, text=True,
                          timeout=240, env=env)  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    for side in ("base", "head"):
        cases = {c["workload"]: c for c in json.loads((repo / "o5" / side / "results.json").read_text())["cases"]}
        assert (
            cases["hog.hog"]["errors"][0]["kind"] == "oom"
            and "memory limit of 200 MiB" in cases["hog.hog"]["errors"][0]["message"]
        )
        assert all(len(c["rounds"]) == 2 for name, c in cases.items() if name != "hog.hog")


def test_ab_build_failure_is_an_infrastructure_error(repo: Path) -> None:
    proc = perfci(repo, "ab", "HEAD~1", "HEAD", "--path", "perf", "--build", "exit 7", "--out", str(repo / "o3"))
    assert proc.returncode == 3
    assert "build command failed" in proc.stderr


@SERIAL
def test_run_confirm_remeasures_flagged_cases_by_ab(repo: Path) -> None:
    git(repo, "checkout", "-q", "HEAD~1")
    first = perfci(repo, "run", "perf", "--rounds", "2", "--out", str(repo / "o1"), "--runner", "ci")
    assert first.returncode == 0, first.stderr
    assert perfci(repo, "baseline", "update", "o1/results.json", "--reason", "v1", "--runner", "ci").returncode == 0
    git(repo, "checkout", "-q", "-")  # v2: the "changed" case does 3x the work
    out = repo / "o2"
    args = ("run", "perf", "--rounds", "2", "--runner", "ci", "--confirm", "--out", str(out))
    proc = perfci(repo, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads((out / "comparison.json").read_text())
    changed = next(r for r in doc["rows"] if r["case_id"] == "wl.loop[which=changed]@cpu")
    assert changed["verdict"] == "regression" and changed["method"] == "paired"
    assert "confirmed by A/B against" in changed["note"]
    assert doc["settings"]["confirmation"]["revision"]
    # a baseline whose commit this clone lacks (shallow, squashed): a warning and the stored verdicts (was exit 2,
    # no comparison written)
    stored = repo / "baselines" / "ci.json"
    base_doc = json.loads(stored.read_text())
    base_doc["git"]["commit"] = "0123456789abcdef0123456789abcdef01234567"
    stored.write_text(json.dumps(base_doc))
    proc = perfci(repo, "run", "perf", "--rounds", "2", "--runner", "ci", "--confirm", "--out", str(repo / "o3"))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "commit 0123456789ab is not in this repository" in proc.stderr.replace("\n", " ")
    assert (repo / "o3" / "comparison.json").exists()
    # no baseline of the runner class: --confirm asked for the gate, which compared nothing and passed; refused
    # before measuring, naming the file looked for and the baselines there are
    proc = perfci(repo, "run", "perf", "--rounds", "2", "--runner", "cpu-other", "--confirm", "--out", str(repo / "o4"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert "--confirm: no baseline of runner class 'cpu-other' (baselines/cpu-other.json does not exist)" in said
    assert "stored baselines: ci (choose one with --runner NAME), so there is nothing to confirm." in said
    assert not (repo / "o4").exists()


@SERIAL
def test_ab_killed_after_its_second_pair_resumes(repo: Path) -> None:
    """SIGKILL after two pairs are on disk; `--resume` keeps those pairs (their rounds unchanged), measures the
    missing ones and ends with a decision."""
    import os
    import signal
    import time

    out = repo / "out-resume"
    args = ["ab", "HEAD~1", "HEAD", "--path", "perf", "--pairs", "5", "--looks", "1", "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "perfci", *args], cwd=repo, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def rounds(side: str) -> dict[str, dict[int, list[float]]]:
        try:
            doc = json.loads((out / side / "results.json").read_text())
        except (OSError, ValueError):
            return {}
        return {c["id"]: {r["index"]: r["samples"] for r in c["rounds"]} for c in doc["cases"]}

    deadline = time.monotonic() + 180
    while True:
        measured = [rounds("base"), rounds("head")]
        if all(side and all(len(r) >= 2 for r in side.values()) for side in measured):
            break
        assert proc.poll() is None and time.monotonic() < deadline, "the A/B ended or stalled before two pairs"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = [rounds("base"), rounds("head")]
    pairs_before = min(len(r) for side in before for r in side.values())
    assert pairs_before < 5

    # the same cases at other revisions: refused (an A/A resumed the A/B of two revisions without a word)
    other = perfci(repo, "ab", "HEAD", "HEAD", *args[3:], "--resume")
    assert other.returncode == 2, other.stdout + other.stderr
    assert "holds an A/B of another base revision" in other.stderr and "Traceback" not in other.stderr
    resumed = perfci(repo, *args, "--resume")
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr  # the slower case is a regression
    doc = json.loads((out / "comparison.json").read_text())
    assert doc["settings"]["ab"]["pairs_resumed"] >= 2 and doc["settings"]["ab"]["pairs_run"] == 5
    after = [rounds("base"), rounds("head")]
    for side_before, side_after in zip(before, after, strict=True):
        for case, kept in side_before.items():
            assert len(side_after[case]) == 5
            for index in range(doc["settings"]["ab"]["pairs_resumed"]):
                assert side_after[case][index] == kept[index], (case, index)  # the pairs measured before the kill
    # a finished A/B has nothing to continue: resuming it ran more looks than its rules asked for
    again = perfci(repo, *args, "--resume")
    assert again.returncode == 2 and "finished; there is nothing to continue" in again.stderr, again.stderr


@SERIAL
def test_ab_interrupted_says_where_its_pairs_are_and_how_to_go_on(repo: Path) -> None:
    """Ctrl-C once a pair is on disk: exit 130, and the line names the folder and `--resume` (it said only
    "interrupted; worker processes stopped.", and the default folder is a timestamped one)."""
    import signal
    import time

    out = repo / "out-int"
    args = ["ab", "HEAD~1", "HEAD", "--path", "perf", "--pairs", "8", "--looks", "1", "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "perfci", *args], cwd=repo, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 180
    while not all((out / side / "results.json").exists() for side in ("base", "head")):  # a pair on disk
        assert proc.poll() is None and time.monotonic() < deadline, "the A/B ended or stalled before a pair"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert f"--out {out} --resume" in stderr.replace("\n", " "), stderr
    assert "interrupted; worker processes stopped." in stderr


def test_ab_shard_split_by_recorded_durations(repo: Path) -> None:
    """`perfci ab --shard I/N --durations FILE` splits the cases as `perfci run` does (by the recorded times), and
    `--durations` without `--shard` is refused in one line, in `ab` and `ci` alike."""
    first = perfci(repo, "run", "perf", "--rounds", "2", "--out", str(repo / "d"), "--runner", "ci")
    assert first.returncode == 0, first.stderr
    listed = perfci(repo, "list", "perf", "--shard", "1/2", "--durations", "d/results.json")
    assert listed.returncode == 0, listed.stderr
    wanted = {line.split()[0] for line in listed.stdout.splitlines() if line.startswith("wl.")}
    assert len(wanted) == 1, listed.stdout
    out = repo / "ab1"
    args = ("ab", "HEAD~1", "HEAD", "--path", "perf", "--pairs", "2", "--looks", "1", "--out", str(out))
    proc = perfci(repo, *args, "--shard", "1/2", "--durations", "d/results.json", "--exit-zero")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((out / "comparison.json").read_text())
    assert {r["case_id"] for r in doc["rows"]} == wanted
    assert doc["settings"]["shard"] == "1/2" and doc["settings"].get("shard_durations")
    for command in (("ab", "HEAD~1", "HEAD", "--path", "perf"), ("ci", "--path", "perf")):
        refused = perfci(repo, *command, "--durations", "d/results.json")
        assert refused.returncode == 2 and "--durations needs --shard" in refused.stderr, refused.stderr
