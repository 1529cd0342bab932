"""Searches in flight at once (:mod:`nmtlib.decode.interleave`, ``decode.in_flight``).

Interleaving must change only the order of the device's work: every batch decodes exactly as
alone, with the graphed-step machinery's static buffers too (run unrecorded on CPU, as in
``tests/test_decode_graphs.py``; the recorded graphs are checked in ``tests/test_cuda.py``).
"""

from __future__ import annotations

import time

import pytest
import torch

from nmtlib.data.batching import collate
from nmtlib.decode.beam import beam_search, beam_search_steps, greedy_search, greedy_search_steps
from nmtlib.decode.steps import Ensemble
from nmtlib.decode.graphs import GraphedSteps
from nmtlib.decode.interleave import interleave
from nmtlib.decode.translate import DecodeOptions, decode_data

from test_decode_graphs import assert_same, model_of, sentences


def test_searches_are_resumed_in_turn_each_in_its_own_lane():
    log: list[tuple[str, int, int]] = []  # (task, lane, resume)

    def search(name: str, lane: int):
        steps = {"a": 3, "b": 1, "c": 2, "d": 1}[name]
        for k in range(steps):
            log.append((name, lane, k))
            time.sleep(0.01)
            yield
        return name.upper()

    t0 = time.perf_counter()
    done = list(interleave("abcd", search, in_flight=2))
    wall = time.perf_counter() - t0
    assert [(task, result) for task, result, _ in done] == [("b", "B"), ("a", "A"), ("c", "C"), ("d", "D")]
    # a and b start together; b's lane goes to c when b ends, a's to d when a ends
    assert log == [("a", 0, 0), ("b", 1, 0), ("a", 0, 1), ("a", 0, 2), ("c", 1, 0), ("c", 1, 1), ("d", 0, 0)]
    seconds = {task: s for task, _, s in done}
    assert seconds["a"] > 0.03 and seconds["b"] < 0.02
    assert sum(seconds.values()) == pytest.approx(wall, abs=0.01)


def test_one_in_flight_runs_the_tasks_one_after_another():
    order: list[str] = []

    def search(name: str, lane: int):
        assert lane == 0
        for _ in range(2):
            order.append(name)
            yield
        return name

    assert [r for _, r, _ in interleave(["x", "y"], search)] == ["x", "y"]
    assert order == ["x", "x", "y", "y"]
    with pytest.raises(ValueError, match="in_flight must be at least 1"):
        list(interleave(["x"], search, in_flight=0))


@pytest.mark.parametrize("name,tau", [("global-general-feed", None), ("local-m-general-feed", None),
                                      ("rnnsearch", None), ("shu-flexible", None), ("shu-flexible", 1.2)])
def test_interleaved_beam_searches_give_each_batch_alone(name, tau):
    """Three batches in flight through one set of graphed-step buffers: each lane has its own
    slots (shared slots would mix the searches' states), and Flexible Attention with τ, whose
    steps read their windows on the host, is searched eagerly as alone."""
    ensemble = Ensemble([model_of(name)], tau)
    data = sentences(14)
    g = torch.Generator().manual_seed(5)
    for i in range(8, 14):  # two batches of the same shape: 3 sentences, longest 9 tokens
        data.src[i] = torch.randint(4, 40, (9 if i in (8, 11) else 4 + i % 3,), generator=g).tolist()
    batches = [[0, 1, 2, 3], [4, 5, 6], [7], [8, 9, 10], [11, 12, 13]]
    alone = {tuple(idx): beam_search(ensemble, collate(data, idx), beam=4, max_len_ratio=1.0) for idx in batches}
    for graphs in (None, GraphedSteps(ensemble, record=False)):
        def search(idx, lane, graphs=graphs):
            return beam_search_steps(ensemble, collate(data, idx), 4, 1.0, False, graphs, lane)

        finished = list(interleave(batches, search, in_flight=3))
        assert sorted(tuple(idx) for idx, _, _ in finished) == sorted(alone)
        for idx, out, _ in finished:
            assert_same(alone[tuple(idx)], out)


def test_interleaved_greedy_searches_give_each_batch_alone():
    ensemble = Ensemble([model_of("global-general-feed")])
    data = sentences(9)
    batches = [[0, 1, 2], [3, 4], [5, 6, 7, 8]]
    finished = list(interleave(batches, lambda idx, lane: greedy_search_steps(ensemble, collate(data, idx), 1.0), 2))
    for idx, out, _ in finished:
        assert_same(greedy_search(ensemble, collate(data, idx), 1.0), out)


def test_decode_data_rejects_fewer_than_one_in_flight_and_needs_none_on_cpu():
    model = model_of("global-general-feed")
    data = sentences(5)
    with pytest.raises(ValueError, match="in_flight must be at least 1, got 0"):
        decode_data([model], data, DecodeOptions(beam=3, batch_size=2, in_flight=0), torch.device("cpu"))
    one, _ = decode_data([model], data, DecodeOptions(beam=3, batch_size=2), torch.device("cpu"))
    three, times = decode_data([model], data, DecodeOptions(beam=3, batch_size=2, in_flight=3), torch.device("cpu"))
    assert_same(one, three)
    assert all(t > 0 for t in times)


def test_translate_rejects_fewer_than_one_in_flight(tmp_path, capsys):
    from nmtlib.cli import main

    with pytest.raises(SystemExit) as exit_:  # argparse checks the flag against DecodeConfig.in_flight's range
        main(["translate", "--model", str(tmp_path / "m.pt"), "--src", "s", "--src-vocab", "a", "--tgt-vocab", "b",
              "--out", str(tmp_path / "out"), "--in-flight", "0"])
    assert exit_.value.code == 2
    assert "nmtlib translate: error: argument --in-flight: must be at least 1, got 0" in capsys.readouterr().err
