"""bench.stacks: a py-spy profile's top entries, what an issue's note quotes before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import stacks

PROFILE = """\
Thread._bootstrap (threading.py:1002);Thread.run (threading.py:982);Informer._watch (informer.py:175);Client.watch (kube.py:204) 6
Thread._bootstrap (threading.py:1002);Thread.run (threading.py:982);Informer._watch (informer.py:175);SSLSocket.read (ssl.py:1167) 2
Thread._bootstrap (threading.py:1002);Thread.run (threading.py:982);Manager.process (manager.py:348);Client.watch (kube.py:204) 2
a line py-spy never writes
"""


def test_own_and_inclusive_shares_of_the_samples() -> None:
    top = stacks.read(PROFILE.splitlines(), most=3)
    assert top.samples == 10
    assert top.own == [("Client.watch (kube.py:204)", 0.8), ("SSLSocket.read (ssl.py:1167)", 0.2)]
    # the threads' bootstrap frames are on every stack and say nothing: left out
    assert top.inclusive[0] == ("Client.watch (kube.py:204)", 0.8)
    assert ("Informer._watch (informer.py:175)", 0.8) in top.inclusive
    assert not [f for f, _ in top.inclusive if f.startswith("Thread.")]


def test_an_empty_profile_has_no_entries_and_an_unreadable_one_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert stacks.read([]).own == []
    assert stacks.main([str(tmp_path / "missing.txt")]) == 1
    assert "cannot read" in capsys.readouterr().err
    good = tmp_path / "p.txt"
    good.write_text(PROFILE)
    assert stacks.main([str(good)]) == 0
    assert "80.0%  Client.watch (kube.py:204)" in capsys.readouterr().out


@pytest.mark.parametrize("most", [1, 2])
def test_most_bounds_each_table(most: int) -> None:
    top = stacks.read(PROFILE.splitlines(), most=most)
    assert len(top.own) == most and len(top.inclusive) == most
