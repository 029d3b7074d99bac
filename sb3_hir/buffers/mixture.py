"""The sampler over the buffer's sources: :class:`Mixture`, which owns ``sample()`` and what each source served last.

A batch mixes the online rows and the demonstrations by weight, as TorchRL's ``ReplayBufferEnsemble(p=...)`` mixes
its buffers: ``demo_ratio`` of it from the demonstrations (:meth:`Demonstrations.count
<sb3_hir.buffers.demonstrations.Demonstrations.count>`: all of it while the online rows are empty), the rest online,
online rows first. Within each source, ``Binomial(n, relabel_ratio)`` rows are drawn under a hindsight instruction by
the source's draw strategy, and the rest are drawn exactly as ``DictReplayBuffer`` draws them (``np.random``, which
SB3 seeds). One serving serves both sources, so a demonstration is rewarded and terminated as an online episode is.
(:class:`~sb3_hir.buffers.recorded_rows.RecordedRows`: with the compiled kernels, the same draws in one kernel call).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_hir._validate import check_int, check_number
from sb3_hir.buffers import compiled
from sb3_hir.buffers.demonstrations import Demonstrations, concat_samples
from sb3_hir.buffers.draws import Relabeled
from sb3_hir.buffers.recorded_rows import RecordedRows, with_envs
from sb3_hir.buffers.serving import Served, Serving
from sb3_hir.buffers.source import Source

__all__ = ["Mixture"]


class Mixture:
    """``sample()`` over the online rows and the demonstrations (module docstring).

    :param online: the online rows (circular).
    :param demonstrations: the demonstration region, served as its ``ratio`` of each batch.
    :param serving: how drawn rows become SB3's samples, shared by both sources.
    :param relabel_ratio: share of each source's rows served under a hindsight draw (settable).
    """

    def __init__(self, online: Source, demonstrations: Demonstrations, serving: Serving, relabel_ratio: float
                 ) -> None:
        self.online = online
        self.demonstrations = demonstrations
        self.serving = serving
        self.relabel_ratio = relabel_ratio
        #: transitions served so far, how many of them relabeled, and how many from the demonstrations.
        self.num_served = 0
        self.num_served_relabeled = 0
        self.num_served_demos = 0
        #: what the last ``sample()`` served from each source (None: nothing).
        self.last_online: Served | None = None
        self.last_demonstrations: Served | None = None
        #: how the recorded rows are drawn (the buffer's ``jit`` switches it with the draws).
        self.recorded_rows = RecordedRows(compiled.enabled())

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("recorded_rows", None)  # decided where the buffer is loaded
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.recorded_rows = RecordedRows(compiled.enabled())

    @property
    def relabel_ratio(self) -> float:
        return self._relabel_ratio

    @relabel_ratio.setter
    def relabel_ratio(self, value: float) -> None:
        self._relabel_ratio = check_number(value, "relabel_ratio", 0.0, 1.0,
                                           hint="the share of sampled transitions served relabeled")

    def sample(self, batch_size: int, env: VecNormalize | None = None) -> DictReplayBufferSamples:
        """A batch from the two sources: the online rows first, then the demonstrations' share (if any)."""
        check_int(batch_size, "batch_size", 1)
        online, demos = self.online, self.demonstrations
        upper = online.upper
        num_demos = demos.count(batch_size, online.view.rng, online_empty=upper == 0)
        if upper == 0 and not num_demos:
            raise ValueError("cannot sample from an empty replay buffer")
        if not num_demos:
            return self._sample_source(online, batch_size, env)
        assert demos.source is not None
        demo_part = self._sample_source(demos.source, num_demos, env, online=False)
        self.num_served_demos += num_demos
        if num_demos == batch_size:
            self.last_online = None
            return demo_part
        return concat_samples(self._sample_source(online, batch_size - num_demos, env), demo_part)

    def sample_recorded(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> DictReplayBufferSamples:
        """Online rows ``batch_inds`` served as recorded (with random sub-envs), as ``DictReplayBuffer`` serves
        them (SB3's ``_get_samples``)."""
        # A copy: the served rows are kept (last_sample_info), and the caller's array is the caller's.
        return self._serve(self.online, with_envs(np.array(batch_inds), self.online.storage.n_envs), None, env)

    def reset_counts(self) -> None:
        """Forget what was served (the buffer's ``reset``)."""
        self.num_served = self.num_served_relabeled = self.num_served_demos = 0

    def _sample_source(self, source: Source, batch_size: int, env: VecNormalize | None, online: bool = True
                       ) -> DictReplayBufferSamples:
        """``batch_size`` rows of one source: relabeled and recorded ones."""
        rng = source.view.rng
        ratio = self._relabel_ratio
        num_relabel = int(rng.binomial(batch_size, ratio)) if ratio > 0 else 0
        relabeled = source.draw(num_relabel) if num_relabel else None
        num_recorded = batch_size - (0 if relabeled is None else len(relabeled.flat))
        return self._serve(source, self.recorded_rows(source.upper, num_recorded, source.storage.n_envs), relabeled,
                           env, online)

    def _serve(self, source: Source, recorded_flat: np.ndarray, relabeled: Relabeled | None,
               env: VecNormalize | None, online: bool = True) -> DictReplayBufferSamples:
        """Serve one source's recorded rows and relabeled pairs as one batch, and count them."""
        samples, served = self.serving.serve(source.storage, recorded_flat, relabeled, env)
        if online:
            self.last_online = served
        else:
            self.last_demonstrations = served
        self.num_served += len(served.flat)
        self.num_served_relabeled += len(served.flat) - served.num_recorded
        return samples

