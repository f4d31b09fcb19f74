"""One runner class for every command: with both a configured `runner` and $PERFCI_RUNNER set, `run` (which
baseline it reads), `compare` (against baselines/), `baseline update` (which file it writes) and `history
ingest` (under which runner a run is stored) agree: flag > environment > configuration > derived.

A regression test: `perfci run` used to read baselines/<config>.json while `baseline update` wrote
baselines/<env>.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app
from perfci.store.history import HistoryStore

pytestmark = pytest.mark.integration
TINY = Path(__file__).parents[1] / "data" / "workloads" / "tiny.py"


def test_config_runner_and_env_runner_agree_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "perfci.toml").write_text('runner = "from-config"\n')
    (tmp_path / ".git").mkdir()  # the project's root: the configuration search stops here
    monkeypatch.chdir(tmp_path)
    cli = CliRunner(env={"PERFCI_RUNNER": "from-env", "PERFCI_DB": ""})

    first = cli.invoke(app, ["run", str(TINY), "--rounds", "2", "--out", "out1"])
    assert first.exit_code == 0, first.output
    assert not (tmp_path / "out1" / "comparison.json").exists()  # no baseline yet, under either name

    update = cli.invoke(app, ["baseline", "update", "out1/results.json", "--reason", "first"])
    assert update.exit_code == 0, update.output
    assert sorted(p.name for p in (tmp_path / "baselines").iterdir()) == ["from-env.json"]

    second = cli.invoke(app, ["run", str(TINY), "--rounds", "2", "--out", "out2", "--exit-zero"])
    assert second.exit_code == 0, second.output
    saved = json.loads((tmp_path / "out2" / "comparison.json").read_text())
    assert saved["baseline"]["label"] == str(Path("baselines") / "from-env.json")

    compared = cli.invoke(app, ["compare", "out2/results.json", "--format", "json", "--exit-zero"])
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.stdout)["baseline"]["label"] == "baselines/from-env.json"

    db = f"sqlite:///{tmp_path / 'history.db'}"
    ingested = cli.invoke(app, ["history", "ingest", "out2/results.json", "--db", db])
    assert ingested.exit_code == 0, ingested.output
    assert HistoryStore(db).runners() == ["from-env"]

    # the flag beats both
    flagged = cli.invoke(app, ["baseline", "update", "out2/results.json", "--reason", "x", "--runner", "flag"])
    assert flagged.exit_code == 0, flagged.output
    assert (tmp_path / "baselines" / "flag.json").exists()
