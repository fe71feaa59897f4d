"""``bench/peer_compare.py --alpha --reproducibility`` (issue 25.1): each tool's margins again in other batch
sizes, against its own first run -- the noise floor of "ours minus alpha-CROWN's".  Tools faked here: the
figures are the most negative difference and the count of margins that moved down by more than 1e-3, over
every batch size and per batch size, for each tool separately; alpha-CROWN's spread per margin over its
batchings; and ours in each batching against alpha-CROWN's worst batching of each margin."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
import torch
from cftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import peer_compare_alpha as pca  # noqa: E402 - the bench script

N, K = 6, 3
FIRST = torch.zeros(N, K, dtype=torch.float64)


def _shift(size: int) -> torch.Tensor:
    """What a tool returns in batches of ``size``: 0 but one margin per size, moved by a size-specific step."""
    d = torch.zeros(N, K, dtype=torch.float64)
    d[size % N, 1] = {5: -2e-3, 2: -5e-4}[size]
    d[0, 0] = {5: +1e-2, 2: -3e-3}[size]
    return d


class _FakePeerModule:
    def __init__(self, onnx_path, prop, batches, device):
        self.batches, self.others = batches, torch.arange(K).repeat(N, 1)
        self.module = SimpleNamespace(bound_opts={"optimize_bound_args": {"early_stop_patience": 10}})


class _FakeAlphaPeer:
    def __init__(self, peer):
        self.peer = peer

    def __call__(self, b):
        assert self.peer.module.bound_opts["optimize_bound_args"]["early_stop_patience"] > pca.ITERATIONS
        return FIRST[b] if self._size == 3 else _shift(self._size)[b]


class _FakeAlphaOurs:
    def __init__(self, net, prop, batches, device, widen):
        self.size = len(batches[0])

    def __call__(self, b):
        return 2 * _shift(self.size)[b]  # ours moves twice as far


def test_reproducibility_reports_each_tools_own_spread(monkeypatch):
    def alpha_peer(peer):
        tool = _FakeAlphaPeer(peer)
        tool._size = next(sizes)
        return tool

    monkeypatch.setattr(pca, "Peer", _FakePeerModule)
    monkeypatch.setattr(pca, "AlphaOurs", _FakeAlphaOurs)
    monkeypatch.setattr(pca, "AlphaPeer", alpha_peer)
    monkeypatch.setattr(pca, "margins_ours", lambda lowers, labels, others: torch.cat(lowers))
    monkeypatch.setattr(pca, "REBATCH", (5, 2))
    # one fresh peer module per batch, early stop off: the row's batches of 3 (the reference run, 2
    # modules), then batches of 5 over 6 images (2 modules) and of 2 (3 modules)
    sizes = iter([3, 3, 5, 5, 2, 2, 2])
    prop = SimpleNamespace(lb=torch.zeros(N, 4), labels=torch.zeros(N, dtype=torch.long))
    rec = pca.reproducibility(None, prop, None, torch.device("cpu"), False, FIRST, 3, None)
    assert rec["rebatch"] == [5, 2]
    assert rec["peer_self_min"] == -3e-3 and rec["peer_self_rows_looser_by_1e_3"] == 1  # one per size, max over sizes
    assert rec["ours_self_min"] == -6e-3 and rec["ours_self_rows_looser_by_1e_3"] == 1
    assert rec["peer_self"] == {5: [-2e-3, 1], 2: [-3e-3, 1]} and rec["ours_self"] == {5: [-4e-3, 1], 2: [-6e-3, 1]}
    # margin (0, 0) is 0, +1e-2, -3e-3 over the peer's batchings: spread 1.3e-2; (5, 1) spreads 2e-3, (2, 1) 5e-4
    assert rec["peer_spread_max"] == pytest.approx(1.3e-2) and rec["peer_spread_rows_over_1e_3"] == 2
    # the peer's worst per margin: (0, 0) -3e-3, (5, 1) -2e-3, (2, 1) -5e-4; ours in batches of 3 is above it
    # everywhere, in 5 below it at (5, 1) (-4e-3 against -2e-3), in 2 at (0, 0) (-6e-3 against -3e-3)
    worst = rec["ours_vs_peer_worst"]
    assert set(worst) == {3, 5, 2} and worst[3] == [0.0, 0]
    assert worst[5][0] == pytest.approx(-2e-3) and worst[5][1] == 1
    assert worst[2][0] == pytest.approx(-3e-3) and worst[2][1] == 1
