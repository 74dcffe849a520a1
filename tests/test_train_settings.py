"""Each training setting is declared once (train/settings.py): TrainConfig and the options of
`train` are made from the declarations, and `train --help` lists them panel by panel."""

from __future__ import annotations

import dataclasses
import re

import pytest

from bitextmine.train import TrainConfig
from bitextmine.train.settings import PANELS, SETTINGS

PANEL_LINE = re.compile(r"^╭─ (.+?) ─")


def help_at(cli, monkeypatch, columns: int) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(columns))
    result = cli("train", "--help")
    assert result.exit_code == 0, result.stderr
    return result.stdout.splitlines()


def panels_of(lines: list[str]) -> dict[str, str]:
    """Each panel's title -> its text."""
    found, title = {}, None
    for line in lines:
        match = PANEL_LINE.match(line)
        if match:
            title = match.group(1)
            found[title] = ""
        elif line.startswith("╰"):
            title = None
        elif title is not None:
            found[title] += line + "\n"
    return found


def test_the_config_is_made_of_the_declared_settings():
    fields = dataclasses.fields(TrainConfig)
    assert [f.name for f in fields] == [s.name for s in SETTINGS]
    assert all(f.default == s.default for f, s in zip(fields, SETTINGS, strict=True))
    assert TrainConfig(lr=1e-3).lr == 1e-3 and TrainConfig.__module__ == "bitextmine.train.config"
    assert {s.panel for s in SETTINGS} <= set(PANELS)


def test_every_setting_is_an_option_in_its_panel_and_the_panels_come_in_order(cli, monkeypatch):
    panels = panels_of(help_at(cli, monkeypatch, 200))
    assert [title for title in panels if title in PANELS.values()] == list(PANELS.values())
    for setting in SETTINGS:
        flag = setting.shown
        if setting.option:
            assert re.search(rf"{re.escape(flag)}\b", panels[PANELS[setting.panel]]), (flag, setting.panel)
        else:
            assert not any(flag in text for text in panels.values()), flag
    assert "--help" in panels[PANELS["run"]] and "--output" in panels[PANELS["run"]]


def test_a_value_below_a_settings_least_is_a_usage_error(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "200")
    result = cli("train", "x.tsv", "-o", tmp_path / "out", "--batch-size", "1")
    assert result.exit_code == 2 and "--batch-size" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("columns", [80, 100])
def test_the_help_reads_whole_and_its_examples_paste_as_shown(cli, monkeypatch, columns):
    from typer.main import get_command

    from bitextmine.cli import app

    lines = [line.strip() for line in help_at(cli, monkeypatch, columns)]
    epilog = get_command(app).commands["train"].epilog
    examples = [line.strip() for line in epilog.splitlines() if line.strip().startswith("bitextmine ")]
    assert len(examples) == 4 and all(example in lines for example in examples)  # none wrapped
    # no help text is cut short (at 80 columns typer's table still cuts a few long flag names)
    cut = [line for line in lines if "…" in line]
    assert not cut if columns >= 90 else all(word.startswith("--") for line in cut for word in re.findall(r"(\S+)…",
                                                                                                       line)), cut
