"""`perfci ci` without measuring: which gate the GitHub environment asks for, workflow-command escaping, the
annotations and the outputs file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfci.api.ci import (
    CIOutcome,
    CIPlan,
    CIRequest,
    escape_data,
    escape_property,
    outputs,
    plan_ci,
    publish,
    workflow_annotations,
)
from perfci.api.settings import CIEnvironment, Settings
from perfci.compare.gate import ExitCode
from perfci.errors import UsageError
from perfci.format.model import Comparison, MetricComparison, RunResult, Verdict
from perfci.metrics.registry import LATENCY


def test_a_pull_request_is_an_ab_against_its_base(tmp_path: Path) -> None:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "main"}
    plan = plan_ci(Settings(env), CIRequest(), repo=tmp_path)  # not a repository: no origin/main
    assert (plan.mode, plan.base_rev, plan.ingest) == ("ab", "main", False)


def test_a_base_given_is_compared_as_given_and_githubs_branch_as_its_remote(tmp_path: Path) -> None:
    """`--base HEAD~1` was taken as `origin/HEAD~1` (another commit) whenever that resolved; a branch name from
    GitHub still means the remote-tracking branch, which a CI checkout has."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    for n in range(3):
        (tmp_path / "f").write_text(str(n))
        git("add", "f")
        git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", f"c{n}")
    git("update-ref", "refs/remotes/origin/HEAD", "HEAD~2")  # a remote whose HEAD~1 is another commit
    git("update-ref", "refs/remotes/origin/main", "HEAD~2")
    git("branch", "-f", "main", "HEAD~1")
    plan = plan_ci(Settings({}), CIRequest(base="HEAD~1"), repo=tmp_path)
    assert (plan.mode, plan.base_rev) == ("ab", "HEAD~1")
    assert plan_ci(Settings({}), CIRequest(base="main"), repo=tmp_path).base_rev == "main"  # the local branch named
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "main"}
    assert plan_ci(Settings(env), CIRequest(), repo=tmp_path).base_rev == "origin/main"


def test_a_pull_request_checkout_that_is_its_base_is_refused(tmp_path: Path) -> None:
    """`pull_request_target` checks out the base branch: the A/B compared the base with itself and passed without
    measuring the pull request (a user audit). Refused while the checkout is the base commit, unchanged; a change in
    the working tree, another commit, or a base given with --base (an A/A on purpose) go on."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    (tmp_path / "f").write_text("0")
    git("add", "f")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c0")
    git("update-ref", "refs/remotes/origin/main", "HEAD")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_BASE_REF": "main"}
    with pytest.raises(UsageError, match="the checkout is the pull_request_target event's base itself") as refused:
        plan_ci(Settings(env), CIRequest(), repo=tmp_path)
    assert "github.event.pull_request.head.sha" in (refused.value.hint or "")
    assert plan_ci(Settings(env), CIRequest(base="origin/main"), repo=tmp_path).base_rev == "origin/main"
    (tmp_path / "f").write_text("1")  # the pull request's change, not committed
    assert plan_ci(Settings(env), CIRequest(), repo=tmp_path).base_rev == "origin/main"
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "c1")
    assert plan_ci(Settings(env), CIRequest(), repo=tmp_path).base_rev == "origin/main"


def test_a_merge_group_takes_its_base_commit_from_the_event_payload(tmp_path: Path) -> None:
    """GitHub sets GITHUB_BASE_REF for pull requests only: a merge-queue run fell back to a baseline run that
    passed with nothing to compare (fuzzing)."""
    event = tmp_path / "event.json"
    event.write_text('{"merge_group": {"base_sha": "abc123", "base_ref": "refs/heads/main"}}')
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": str(event)}
    plan = plan_ci(Settings(env), CIRequest(), repo=tmp_path)
    assert (plan.mode, plan.base_rev) == ("ab", "abc123")
    event.write_text('{"pull_request": {"base": {"ref": "release"}}}')
    pull = {**env, "GITHUB_EVENT_NAME": "pull_request"}
    assert plan_ci(Settings(pull), CIRequest(), repo=tmp_path).base_rev == "release"


@pytest.mark.parametrize("payload", [None, "not json", '{"merge_group": 5}', '{"merge_group": {"base_sha": 7}}'])
def test_a_pull_request_event_without_a_known_base_is_refused(tmp_path: Path, payload: str | None) -> None:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "merge_group"}
    if payload is not None:
        (tmp_path / "event.json").write_text(payload)
        env["GITHUB_EVENT_PATH"] = str(tmp_path / "event.json")
    with pytest.raises(UsageError, match="a merge_group event needs a base revision") as refused:
        plan_ci(Settings(env), CIRequest(), repo=tmp_path)
    if payload is None:  # it said "no base in the event payload", with no payload named anywhere
        assert "no GITHUB_EVENT_PATH (the event payload)" in refused.value.message
    assert plan_ci(Settings(env), CIRequest(mode="baseline")).mode == "baseline"  # asked for: allowed
    assert plan_ci(Settings(env), CIRequest(base="main"), repo=tmp_path).mode == "ab"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (None, r"the event payload \S+event.json cannot be read \(No such file or directory\)"),
        ("{oops", r"the event payload \S+event.json is not a JSON document"),
        ('{"pull_request": {}}', "no base in the event payload"),
    ],
)
def test_the_refusal_says_why_the_event_payload_gave_no_base(tmp_path: Path, payload: str | None, reason: str) -> None:
    event = tmp_path / "event.json"
    if payload is not None:
        event.write_text(payload)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    with pytest.raises(UsageError, match=rf"\(no GITHUB_BASE_REF, {reason}\)\. \(hint: pass --base REV"):
        plan_ci(Settings(env), CIRequest(), repo=tmp_path)


def test_a_push_is_a_run_ingested_only_with_a_store() -> None:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push"}
    assert plan_ci(Settings(env), CIRequest()).mode == "baseline"
    assert not plan_ci(Settings(env), CIRequest()).ingest
    assert plan_ci(Settings({**env, "PERFCI_DB": "sqlite:///x.db"}), CIRequest()).ingest


def test_outside_github_flags_decide() -> None:
    assert plan_ci(Settings({}), CIRequest(base="v1.0"), repo=Path("/")).mode == "ab"
    assert plan_ci(Settings({}), CIRequest()).mode == "baseline"
    with pytest.raises(UsageError):
        plan_ci(Settings({}), CIRequest(mode="ab"))


def test_environments_make_an_ab_of_the_working_tree_without_a_base() -> None:
    """`perfci ci --base-python locked --head-python upgraded` on a schedule: no base revision needed."""
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "schedule"}
    req = CIRequest(base_python=Path("locked"), head_python=Path("upgraded"))
    plan = plan_ci(Settings(env), req)
    assert (plan.mode, plan.base_rev, plan.ingest) == ("ab", None, False)
    assert plan_ci(Settings({}), CIRequest(base="v1.0", head_python=Path("up")), repo=Path("/")).base_rev == "v1.0"


def test_workflow_command_escaping() -> None:
    assert escape_data("50%\r\nx::y") == "50%25%0D%0Ax::y"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def _outcome(tmp_path: Path) -> CIOutcome:
    evil = "wl.f[s=a\n::error::pwned,x:y]@cpu"
    rows = (
        MetricComparison(evil, LATENCY, Verdict.REGRESSION, ratio=1.1, ratio_low=1.05, ratio_high=1.15),
        MetricComparison("ok@cpu", LATENCY, Verdict.UNCHANGED, ratio=1.0),
    )
    run = RunResult("r", "", "", {}, None, {}, ())
    where = CIEnvironment(True, "pull_request", "main", tmp_path / "summary", tmp_path / "output")
    plan = CIPlan("ab", "main", False, where)
    return CIOutcome(plan, Comparison("base", "head", rows), run, tmp_path / "out", ExitCode.REGRESSION)


def test_annotations_name_the_regressed_case_on_one_line(tmp_path: Path) -> None:
    lines = workflow_annotations(_outcome(tmp_path))
    assert len(lines) == 1 and lines[0].startswith("::error title=perfci regression%3A wl.f[s=a%0A")
    assert "\n" not in lines[0] and "+10.0%25" in lines[0]
    assert workflow_annotations(_outcome(tmp_path), report_only=True)[0].startswith("::warning ")
    # a row's note is in its annotation; an inconclusive row without one points at the report (it ended in "; ")
    outcome = _outcome(tmp_path)
    noted = MetricComparison("w.a@cpu", LATENCY, Verdict.REGRESSION, ratio=2.0, note="beyond the declared change")
    bare = MetricComparison("w.b@cpu", LATENCY, Verdict.INCONCLUSIVE, ratio=1.1)
    comparison = Comparison("base", "head", (noted, bare))
    first, second = workflow_annotations(
        CIOutcome(outcome.plan, comparison, outcome.run, outcome.out_dir, outcome.code)
    )
    assert "+100.0%25; beyond the declared change; see " in first
    assert second.endswith("not settled; see " + str(tmp_path / "out" / "report.html"))


def test_a_missing_case_is_annotated_counted_and_named_by_the_verdict(tmp_path: Path) -> None:
    """An audit: a baseline case not measured failed `perfci ci` (exit 1) with no `::error` for it, and the outputs
    said `verdict=regression` with `regressions=0`; a push with no baseline said `verdict=pass`."""
    outcome = _outcome(tmp_path)
    gone = MetricComparison("w.gone@cpu", LATENCY, Verdict.MISSING, note="not in the candidate")
    allowed = MetricComparison("w.old@cpu", LATENCY, Verdict.MISSING, expected="missing allowed (--allow-missing)")
    done = replace(outcome, comparison=Comparison("base", "head", (gone, allowed)))
    error, warning = workflow_annotations(done)
    assert error.startswith("::error title=perfci missing%3A w.gone@cpu::w.gone@cpu: not in the candidate")
    assert warning.startswith("::warning ") and "missing allowed" in warning
    values = outputs(done)
    assert (values["verdict"], values["missing"], values["regressions"]) == ("missing", "1", "0")
    # a regression beside a missing case: the verdict is the regression
    assert outputs(replace(done, comparison=Comparison("b", "h", (gone, *outcome.comparison.rows))))["verdict"] == (
        "regression"
    )
    assert outputs(replace(outcome, comparison=None, code=ExitCode.OK))["verdict"] == "no-baseline"
    assert outputs(replace(outcome, comparison=Comparison("b", "h", ()), code=ExitCode.OK))["verdict"] == "pass"


def test_publish_appends_the_summary_and_writes_the_outputs(tmp_path: Path) -> None:
    outcome = _outcome(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "summary.md").write_text("### perfci: REGRESSION\n")
    (tmp_path / "summary").write_text("earlier step\n")
    publish(outcome)
    assert (tmp_path / "summary").read_text().startswith("earlier step\n### perfci: REGRESSION")
    lines = (tmp_path / "output").read_text().splitlines()
    assert "verdict=regression" in lines and "regressions=1" in lines and "exit-code=1" in lines
    assert f"report={tmp_path / 'out' / 'report.html'}" in lines


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a device that is always full)")
def test_an_outputs_file_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    """GITHUB_OUTPUT on a full disk: the error said "No space left on device." and named no file."""
    from perfci.errors import InfrastructureError

    outcome = _outcome(tmp_path)
    full = replace(outcome, plan=replace(outcome.plan, where=replace(outcome.plan.where, output=Path("/dev/full"))))
    with pytest.raises(InfrastructureError, match=r"could not write the outputs file /dev/full: No space left"):
        publish(full)


def test_a_gate_stopped_by_a_full_disk_still_publishes_its_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An OSError (a full disk, an unwritable cache) left $GITHUB_OUTPUT and the step summary empty: no
    `verdict=error`, no `::error` line."""
    import errno

    from perfci.api.ci import CIRequest
    from perfci.cli.ci import failure_published
    from perfci.errors import InfrastructureError

    req = CIRequest(step_summary=tmp_path / "summary.md", github_output=tmp_path / "output.txt")
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out" / "report.html"))
    with pytest.raises(InfrastructureError, match="No space left on device"), failure_published(Settings({}), req):
        raise full
    outputs = (tmp_path / "output.txt").read_text().splitlines()
    assert "verdict=error" in outputs and "exit-code=3" in outputs
    assert "No space left on device" in (tmp_path / "summary.md").read_text()
    assert any(line.startswith("::error title=perfci::") for line in capsys.readouterr().out.splitlines())


def test_a_configuration_that_cannot_be_read_is_published_as_the_gates_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken perfci.toml stopped `perfci ci` before the code that publishes a failure: exit 2 with nothing in
    $GITHUB_OUTPUT or the step summary (the action's `verdict` output empty) and no `::error` line."""
    from typer.testing import CliRunner

    from perfci.cli import app

    (tmp_path / "perfci.toml").write_text('threshold = "abc\n')
    output, summary = tmp_path / "output.txt", tmp_path / "summary.md"
    monkeypatch.chdir(tmp_path)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push", "GITHUB_OUTPUT": str(output),
           "GITHUB_STEP_SUMMARY": str(summary)}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["ci", "--path", "perf"])
    assert result.exit_code == 2, result.output
    lines = output.read_text().splitlines()
    assert "verdict=error" in lines and "exit-code=2" in lines, lines
    assert "perfci.toml" in summary.read_text()
    assert any(
        line.startswith("::error title=perfci::") and "perfci.toml" in line for line in result.stdout.splitlines()
    )


def test_a_store_url_that_could_never_work_is_refused_before_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push run with PERFCI_DB=notaurl measured every case, then said "'notaurl' is not a database URL"."""
    import perfci.api.ci as ci_api
    from perfci.api.ci import run_ci

    def measured(*_args: object, **_kw: object) -> None:
        raise AssertionError("measured before the store URL was checked")

    monkeypatch.setattr(ci_api, "measure", measured)
    monkeypatch.chdir(tmp_path)
    for url, words in (("notaurl", "'notaurl' is not a database URL"), ("nosuchdb://x/y", "not a database URL")):
        settings = Settings({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push", "PERFCI_DB": url})
        plan = plan_ci(settings, CIRequest(out=tmp_path / "out"), repo=tmp_path)
        assert plan.ingest
        with pytest.raises(UsageError, match=words):
            run_ci(settings, CIRequest(out=tmp_path / "out"), settings.env, plan=plan)
