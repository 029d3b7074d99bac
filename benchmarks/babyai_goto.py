"""BabyAI's go-to levels learned from sparse reward: DQN + history window + hindsight relabeling ("some") against
the same learner without relabeling ("none") and a uniform random policy, over seeds, on a CPU-time budget per run.

The env is the ``sb3-hir-minigrid`` plugin's :func:`~sb3_hir_minigrid.make_babyai_goto` (BabyAI's own level, its
own missions and success test, read from ``env.instrs``), under sb3-hir's :class:`~sb3_hir.history.HistoryWrapper`.
The learner is SB3's DQN, unchanged, with :class:`~sb3_hir.extractors.HistoryExtractor` and
:class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` (n-step returns; ``none`` is the same buffer with
``relabel_ratio=0``, so both sides get the same n-step windows). Every ``--eval-minutes`` of the run's own CPU time
the greedy policy plays ``--eval-episodes`` held-out missions (seed ``10000 + seed``, the same for every side and
for the random policy). CPU time, not wall time: each run is one process on one core (one torch thread), so the
budget stays "one CPU-hour per seed" when the machine is shared; ``wall_minutes`` is kept beside it.

Bot demonstrations (issue 54, item 4): ``--demos N`` collects N episodes of BabyAI's own bot (the plugin's
``"babyai-bot"`` expert, minigrid >= 3.0) per seed, as ``sb3-hir train --demos N --expert babyai-bot`` does: in the
training env stack (the same wrappers and window, so they are stored as the buffer stores its own rows), seeded with
:func:`~sb3_hir.experiment.seeds.demo_seed` (apart from the training and held-out streams). The DQN variants keep
them in the replay buffer's demonstrations (``add_demonstrations``), served as ``--demo-ratio`` of each batch
(default 0.5, ``train``'s) and relabeled as online episodes are. Why: BabyAI ships a teacher, and demonstrations are
what a replay buffer can take beside its own episodes; the question is what N of them buy over the hindsight
relabeling alone ("some" without ``--demos``), and over learning from them alone: the ``bc`` variant is BC
(imitation's ``bc.BC``, built as ``babyai_dagger.py``'s BC arm) on the same episodes, with a policy reading the same
window through the same extractor and hidden layers, evaluated greedily on the same held-out missions every
``--eval-minutes`` on the same CPU clock, until ``--cpu-minutes``. Each run collects its seed's demonstrations
itself (the same episodes for every variant) before its learner is built: the bot's CPU time is not on the curves'
clock, and is reported beside them (``demos`` in ``curve.json`` and ``summary.json``: episodes, steps, CPU minutes;
a second table in ``summary.md``). The PPO variants have no replay buffer and take no demonstrations.

Output in ``--out``: ``<variant>-seed<s>/curve.json`` after every evaluation (a stopped run keeps what it reached),
``random-seed<s>.json``, and ``summary.json`` / ``summary.png`` / ``summary.md``: mean ± std over seeds at each
evaluation, as bands against CPU minutes with the random policy's level.

Usage: ``python benchmarks/babyai_goto.py --level BabyAI-GoToLocal-v0 --k-max 1 --cpu-minutes 60
--eval-minutes 6 --seeds 0 1 2 --variants some none --ray --out runs/babyai-gotolocal``; with demonstrations
``--variants some none bc --demos 200 [--demo-ratio 0.5] --out runs/babyai-gotolocal-demos200`` (one ``--out`` per
demonstration count, for success against the number of demonstrations); ``--collect`` rebuilds the summary from the
run directories (runs stopped early included); ``--diagnose STEPS`` scores one trained model greedy and
epsilon-greedy. ``--eval-epsilon E`` also scores the DQN and BC variants epsilon-greedy at every evaluation (as
DQN's papers evaluate, with the epsilon named in the curves and tables), as the PPO variants are also scored
sampling their actions: a deterministic policy on a partial view can loop where a stochastic one escapes.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir.atomic import atomic_path
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.cli.train import DEFAULT_DEMO_RATIO
from sb3_hir.episodes import Episode
from sb3_hir.experiment import arguments, format_mean_std, markdown_table, seed_process
from sb3_hir.experiment.baselines import EpsilonGreedy, UniformRandomPolicy
from sb3_hir.experiment.budgets import TrainingEpisodes, WallClockCallback, instruction_evaluator
from sb3_hir.experiment.runner import run_all
from sb3_hir.experiment.seeds import demo_seed, eval_seed
from sb3_hir.extractors import HistoryExtractor
from sb3_hir.history import HistoryWrapper

VARIANTS = ("some", "none", "ppo", "ppo-mlp", "bc")
#: The DQN learners: the ones whose replay buffer takes ``--demos``.
DQN_VARIANTS = ("some", "none")
#: PPO learners: no history window (``ppo`` carries its memory in its LSTM, ``ppo-mlp`` has none), scored both
#: greedy and sampling its actions, as BabyAI scores its own PPO agents.
PPO_VARIANTS = ("ppo", "ppo-mlp")
#: rl-zoo3's PPO settings for MiniGrid (``hyperparams/ppo.yml``, after lcswillems/rl-starter-files): on
#: sb3-contrib's RecurrentPPO for ``ppo`` (an LSTM for memory in place of the window), and on plain SB3 PPO for
#: ``ppo-mlp``, which also takes that file's ``normalize: true`` (a ``VecNormalize`` of observations and rewards).
PPO_MINIGRID: dict[str, Any] = dict(n_steps=128, batch_size=64, gae_lambda=0.95, gamma=0.99, n_epochs=10, ent_coef=0.0,
                    learning_rate=2.5e-4, clip_range=0.2)
EVAL_ENVS = 10
#: The demonstrator: the ``sb3-hir-minigrid`` plugin's BabyAI bot (minigrid >= 3.0), which plans from the env's state.
EXPERT = "babyai-bot"
#: The hidden layers of DQN's Q-network, and of BC's policy (the same function class over the same features).
DQN_NET_ARCH = [256, 256]
#: ``bc``: imitation's BC batch (``babyai_dagger.py``'s), or every demonstrated step where there are fewer, and the
#: batches between two looks at the CPU clock (a few tenths of a CPU second with the window).
BC_BATCH_SIZE = 64
BC_BATCHES_PER_CHECK = 25


def env_factory(options: dict[str, Any]) -> Any:
    """One instruction env of the level with the history window: what every env of a run is, the demonstrations'
    included."""
    from sb3_hir_minigrid import make_babyai_goto

    def env_fn() -> Any:
        env = make_babyai_goto(options["level"], k_max=options["k_max"], step_reward=options["step_reward"])
        return HistoryWrapper(env, length=options["history"]) if options["history"] else env

    return env_fn


def make_venv(options: dict[str, Any], seed: int, n_envs: int) -> DummyVecEnv:
    """``n_envs`` copies of the level as instruction envs with the history window, seeded with ``seed``."""
    return cast(DummyVecEnv, make_vec_env(env_factory(options), n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv))


def collect_demos(options: dict[str, Any], seed: int, stream: int | None = None) -> tuple[list[Episode], float]:
    """``--demos`` episodes of BabyAI's bot and the CPU seconds they took (the expert's cost, kept off the learner's
    clock), as ``sb3-hir train --demos N --expert babyai-bot`` collects them: the training env stack (the same
    wrappers and window, so the observations are the buffer's), each env carrying the bot's labels
    (``with_expert_labels``), seeded with :func:`~sb3_hir.experiment.seeds.demo_seed` (apart from training and the
    held-out missions). The same episodes for every variant of a seed: the DQN variants' buffer and ``bc`` get
    these. ``stream``: another seed than ``demo_seed(seed)`` (``bc``'s held-out labels use the held-out missions')."""
    import imitation.data.rollout  # noqa: F401  (expert_episodes' collector: imported before the clock starts)
    from sb3_hir_minigrid.bot import check_bot_available

    from sb3_hir import resolvers
    from sb3_hir.buffers.demonstrations import expert_episodes
    from sb3_hir.env_experts import with_expert_labels

    check_bot_available()  # imports the bot, also before the clock
    start = time.process_time()
    stream = demo_seed(seed) if stream is None else stream
    venv = make_vec_env(with_expert_labels(env_factory(options), EXPERT), n_envs=1, seed=stream,
                        vec_env_cls=DummyVecEnv)
    try:
        expert = resolvers.resolve_expert(EXPERT, venv=venv)
        episodes = expert_episodes(expert, venv, options["demos"], seed=stream)
    finally:
        venv.close()
    return episodes, time.process_time() - start


def variant_options(options: dict[str, Any], variant: str) -> dict[str, Any]:
    """The PPO learners' env has no history window (see :data:`PPO_VARIANTS`)."""
    return {**options, "history": 0} if variant in PPO_VARIANTS else options


def build_ppo(options: dict[str, Any], seed: int, keys: list[str]) -> Any:
    from sb3_contrib import RecurrentPPO

    from sb3_hir.extractors import KeySelectExtractor

    venv = make_venv(variant_options(options, "ppo"), seed, options["n_envs"])
    return RecurrentPPO("MultiInputLstmPolicy", venv, **PPO_MINIGRID,
                        policy_kwargs=dict(features_extractor_class=KeySelectExtractor,
                                           features_extractor_kwargs=dict(keys=keys)),
                        seed=seed, verbose=0, device="cpu")


def build_ppo_mlp(options: dict[str, Any], seed: int, keys: list[str]) -> Any:
    """Plain SB3 PPO as rl-zoo3 trains MiniGrid: ``MultiInputPolicy`` over the flat features, by default under a
    ``VecNormalize`` of observations and rewards (rl-zoo3's ``normalize: true``, with its ``gamma``);
    ``--ppo-normalize`` picks observations only, or none, to find PPO's best honest setting."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from sb3_hir.extractors import KeySelectExtractor

    venv: Any = make_venv(variant_options(options, "ppo-mlp"), seed, options["n_envs"])
    normalize = options.get("ppo_normalize", "obs-reward")
    if normalize != "none":
        venv = VecNormalize(venv, norm_reward=normalize == "obs-reward", gamma=PPO_MINIGRID["gamma"])
    return PPO("MultiInputPolicy", venv, **PPO_MINIGRID,
               policy_kwargs=dict(features_extractor_class=KeySelectExtractor,
                                  features_extractor_kwargs=dict(keys=keys)),
               seed=seed, verbose=0, device="cpu")


def policy_keys(options: dict[str, Any]) -> list[str]:
    """The flat keys the learners read: ``goal_steps`` too where a mission has several goals; with ``--no-goal``
    the observation alone (the ablation that measures how much of a learner's success reads the instruction)."""
    if options.get("no_goal"):
        return ["obs"]
    return ["obs", "goals", "goal_steps"] if options["k_max"] > 1 else ["obs", "goals"]


def build_model(options: dict[str, Any], variant: str, seed: int, demos: list[Episode] | None = None) -> Any:
    """The learner; between ``some`` and ``none`` only the share of relabeled rows changes (``ppo``, ``ppo-mlp``:
    see :data:`PPO_MINIGRID`). ``demos`` (DQN): stored in the replay buffer's demonstrations, served as
    ``--demo-ratio`` of each batch."""
    keys = policy_keys(options)
    if variant == "ppo":
        return build_ppo(options, seed, keys)
    if variant == "ppo-mlp":
        return build_ppo_mlp(options, seed, keys)
    if variant not in DQN_VARIANTS:
        raise ValueError(f"build_model builds {', '.join((*DQN_VARIANTS, *PPO_VARIANTS))}; {variant!r} is "
                         "built by build_bc")
    steps = options["steps"]
    venv = make_venv(options, seed, options["n_envs"])
    # SB3 builds a replay buffer without the env (only its own HerReplayBuffer gets it), so the goal spec the env
    # declares (events, wildcards, padding, groups) is passed explicitly.
    spec = venv.get_attr("goal_spec", indices=[0])[0]
    model = DQN("MultiInputPolicy", venv, learning_rate=options["learning_rate"],
                buffer_size=steps, learning_starts=2_000, batch_size=128, gamma=options["gamma"], train_freq=1,
                gradient_steps=options["gradient_steps"],
                target_update_interval=options["target_update_interval"],
                exploration_fraction=options["exploration_fraction"],
                exploration_final_eps=options["exploration_final_eps"],
                replay_buffer_class=HindsightInstructionReplayBuffer,
                replay_buffer_kwargs=dict(hindsight_goals="some", relabel_ratio=0.8 if variant == "some" else 0.0,
                                          seed=seed, n_steps=options["n_steps"], gamma=options["gamma"],
                                          goal_spec=spec, demo_ratio=options["demo_ratio"] if demos else 0.0),
                policy_kwargs=dict(net_arch=list(DQN_NET_ARCH), **extractor(options, keys)),
                seed=seed, verbose=0, device="cpu")
    if demos:
        cast(HindsightInstructionReplayBuffer, model.replay_buffer).add_demonstrations(demos)
    return model


class BCLearner:
    """imitation's ``bc.BC`` as the CPU clock and the evaluator see a model: the greedy ``predict`` of its policy,
    ``num_timesteps`` 0 (it takes no env step: it learns from the demonstrations alone) and the ``batches`` it
    trained."""

    num_timesteps = 0

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.batches = 0

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> Any:
        return self.trainer.policy.predict(observation, state, episode_start, deterministic)

    def train(self, n_batches: int) -> None:
        self.trainer.train(n_batches=n_batches, progress_bar=False, log_rollouts_n_episodes=0)
        self.batches += n_batches


def build_bc(options: dict[str, Any], seed: int, demos: list[Episode]) -> BCLearner:
    """BC on ``demos`` as ``babyai_dagger.py``'s BC arm builds it (imitation's ``bc.BC`` over an SB3
    ``MultiInputActorCriticPolicy``), reading what the DQN variants read: the same window and extractor
    (:func:`extractor`) and hidden layers. The batch is :data:`BC_BATCH_SIZE`, or every demonstrated step where
    there are fewer (imitation refuses a batch larger than its data)."""
    from imitation.algorithms import bc
    from imitation.util import logger as imit_logger
    from stable_baselines3.common.policies import MultiInputActorCriticPolicy

    env = env_factory(options)()
    space, action_space = env.observation_space, env.action_space
    env.close()
    policy = MultiInputActorCriticPolicy(space, action_space, lambda _: 0.0, net_arch=list(DQN_NET_ARCH),
                                         **extractor(options, policy_keys(options)))
    trainer = bc.BC(observation_space=space, action_space=action_space, rng=np.random.default_rng(seed),
                    policy=policy, demonstrations=[episode.to_trajectory() for episode in demos],
                    batch_size=min(BC_BATCH_SIZE, sum(map(len, demos))), device="cpu",
                    custom_logger=imit_logger.configure(format_strs=[]))
    return BCLearner(trainer)


def extractor(options: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """The window's encoder over ``keys``, or with ``--history 0`` (no window) the current step's encoder alone:
    the flat features (:class:`~sb3_hir.extractors.KeySelectExtractor`) or, with ``--extractor film``, the
    goal-conditioned grid encoder (``sb3_hir_minigrid.BabyAIFiLMExtractor``)."""
    from sb3_hir.extractors import KeySelectExtractor

    current: type = KeySelectExtractor
    if options.get("extractor", "flat") == "film":
        from sb3_hir_minigrid import BabyAIFiLMExtractor

        current = BabyAIFiLMExtractor
    if not options["history"]:
        return dict(features_extractor_class=current, features_extractor_kwargs=dict(keys=keys))
    return dict(features_extractor_class=HistoryExtractor,
                features_extractor_kwargs=dict(keys=keys, encoder=options["encoder"], current_extractor_class=current))


def evaluator(options: dict[str, Any], seed: int, variant: str = "some", normalize: Any = None) -> Any:
    """Greedy on the held-out missions; the PPO learners are also scored sampling their actions, as BabyAI
    evaluates its own PPO agents (``success_rate_sampled``). ``normalize``: the training ``VecNormalize``, whose
    current observation statistics the policy sees (rewards are not normalized in evaluation)."""
    options = variant_options(options, variant)

    def make_eval_venv() -> Any:
        venv = make_venv(options, eval_seed(seed), EVAL_ENVS)
        if normalize is None:
            return venv
        from stable_baselines3.common.vec_env import VecNormalize

        scored = VecNormalize(venv, training=False, norm_reward=False, gamma=normalize.gamma)
        scored.obs_rms = copy.deepcopy(normalize.obs_rms)
        return scored

    greedy = instruction_evaluator(make_eval_venv, options["eval_episodes"], eval_seed(seed))
    epsilon = options.get("eval_epsilon", 0.0)
    if variant not in PPO_VARIANTS:
        if not epsilon:
            return greedy
        noisy = instruction_evaluator(make_eval_venv, options["eval_episodes"], eval_seed(seed))
        probe = make_venv(options, eval_seed(seed), 1)
        space = probe.action_space
        probe.close()

        def greedy_and_noisy(model: Any) -> dict[str, float]:
            policy = EpsilonGreedy(model, space, epsilon, seed=eval_seed(seed))  # the same noise at every evaluation
            return {**greedy(model), epsilon_key(epsilon): noisy(policy)["success_rate"]}

        return greedy_and_noisy
    sampled = instruction_evaluator(make_eval_venv, options["eval_episodes"], eval_seed(seed), deterministic=False)

    def both(model: Any) -> dict[str, float]:
        return {**greedy(model), **{f"{k}_sampled": v for k, v in sampled(model).items()}}

    return both


def epsilon_key(epsilon: float) -> str:
    """The curve's key of the success rate scored epsilon-greedy (``--eval-epsilon``): it names its epsilon."""
    return f"success_rate_epsilon{epsilon:g}"


def stochastic_scores(point: dict[str, Any]) -> list[tuple[str, str]]:
    """The keys of ``point`` (a curve's point, or a summary row's ``<key>_mean``) that score the policy acting
    stochastically, with their names: PPO sampling its actions (as BabyAI scores PPO), DQN epsilon-greedy (as DQN's
    papers evaluate, epsilon named)."""
    found = []
    for name in point:
        if name.endswith("_std"):
            continue
        key = name.removesuffix("_mean")
        if key == "success_rate_sampled":
            found.append((key, "actions sampled"))
        elif key.startswith("success_rate_epsilon"):
            found.append((key, f"epsilon-greedy, epsilon {key.removeprefix('success_rate_epsilon')}"))
    return found


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(data, indent=2) + "\n")


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """One (variant, seed) run; its curve is written after every evaluation and returned.

    With ``--demos`` the bot's episodes are collected first, off the learner's CPU clock (which starts once the
    learner is built); their number, steps and CPU minutes go into ``curve.json`` under ``demos``."""
    options, variant, seed = config["options"], config["variant"], config["seed"]
    seed_process(seed)
    demos: list[Episode] = []
    record: dict[str, Any] | None = None
    if options.get("demos"):
        demos, seconds = collect_demos(options, seed)
        record = dict(expert=EXPERT, episodes=len(demos), steps=sum(map(len, demos)), seed=demo_seed(seed),
                      cpu_minutes=round(seconds / 60, 4),
                      **({"demo_ratio": options["demo_ratio"]} if variant in DQN_VARIANTS else {}))
        print(f"{variant} seed {seed}: {record['episodes']} bot demonstrations, {record['steps']} steps, "
              f"{seconds:.1f} CPU-s (the expert's, not on the learner's clock)", flush=True)
        seed_process(seed)  # the learner starts from the state it starts from without demonstrations
    out = Path(config["out"]) / f"{variant}-seed{seed}" / "curve.json"
    extra: dict[str, Any] = {}

    def report(curve: list[dict[str, float]]) -> None:
        write_json(out, dict(variant=variant, seed=seed, options=options, demos=record, curve=curve, **extra))
        point = curve[-1]
        sampled = "".join(f" ({label} {point[key]:.3f})" for key, label in stochastic_scores(point))
        steps = f"{point['batches']:>8} BC batches" if "batches" in point else f"{point['timesteps']:>8} steps"
        print(f"{variant} seed {seed}: {point['minutes']:6.1f} CPU-min {steps} "
              f"success {point['success_rate']:.3f}{sampled}", flush=True)

    if variant == "bc":
        return {"variant": variant, "seed": seed, "curve": train_bc(options, seed, demos, report)}
    model = build_model(options, variant, seed, demos)
    clock = WallClockCallback(options["eval_minutes"] * 60, options["cpu_minutes"] * 60,
                              evaluator(options, seed, variant, model.get_vec_normalize_env()), report,
                              clock="cpu", training_episodes=TrainingEpisodes(window=100, target=0.99))
    clock.init_callback(model)
    clock.record()  # the untrained policy: every curve starts at 0 minutes
    model.learn(options["steps"], callback=clock)
    if clock.curve[-1]["timesteps"] != model.num_timesteps:
        clock.record()
    if variant in DQN_VARIANTS:  # after the clock: the loop measure is not on the curve's budget
        extra["loops"] = final_loops(model, options, seed)
        report(clock.curve)
    return {"variant": variant, "seed": seed, "curve": clock.curve}


def final_loops(model: Any, options: dict[str, Any], seed: int) -> dict[str, dict[str, float]]:
    """The trained model's failures, greedy and (with ``--eval-epsilon``) epsilon-greedy, measured by
    :func:`revisits` on ``--eval-episodes`` missions of their own: how many end in a cycle (issue 53 item 5)."""
    probe = make_venv(options, eval_seed(seed), 1)
    space = probe.action_space
    probe.close()
    policies: list[tuple[str, Any]] = [("greedy", model)]
    if options.get("eval_epsilon"):
        policies.append((f"epsilon {options['eval_epsilon']:g}",
                         EpsilonGreedy(model, space, options["eval_epsilon"], seed=eval_seed(seed))))
    return {name: revisits(policy, options, seed, options["eval_episodes"]) for name, policy in policies}


def stacked_steps(episodes: list[Episode]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every step's observation (a Dict of stacked arrays) and the bot's action there."""
    from imitation.data.types import DictObs

    trajectories = [episode.to_trajectory() for episode in episodes]
    obs = [cast(DictObs, t.obs) for t in trajectories]  # the wrapper's Dict observations
    keys = list(obs[0].keys())
    observations = {k: np.concatenate([o.get(k)[:-1] for o in obs]) for k in keys}
    return observations, np.concatenate([t.acts for t in trajectories])


def train_bc(options: dict[str, Any], seed: int, demos: list[Episode],
             report: Callable[[list[dict[str, float]]], None]) -> list[dict[str, float]]:
    """``bc``: BC on ``demos`` on the DQN variants' clock: the CPU time from the built learner on, evaluations
    included, with the same greedy evaluator on the same held-out missions every ``--eval-minutes`` (the clock is
    read every :data:`BC_BATCHES_PER_CHECK` batches), until ``--cpu-minutes``. Each point also holds the ``batches``
    trained (``timesteps`` stays 0: BC takes no env step) and ``label_accuracy``: the share of the bot's actions the
    greedy policy takes on twice ``--eval-episodes`` bot episodes of the held-out missions' stream (what it
    generalizes of the teacher, beside what it fits)."""
    warnings.filterwarnings("ignore", category=UserWarning, module="imitation")  # its DictObs chatter
    held_out, _ = collect_demos({**options, "demos": 2 * options["eval_episodes"]}, seed, stream=eval_seed(seed))
    held_obs, held_actions = stacked_steps(held_out)
    learner = build_bc(options, seed, demos)
    greedy = evaluator(options, seed, "bc")

    def evaluate(model: Any) -> dict[str, float]:
        predicted, _ = model.predict(held_obs, deterministic=True)
        return {**greedy(model), "batches": model.batches,
                "label_accuracy": float(np.mean(predicted == held_actions))}

    clock = WallClockCallback(options["eval_minutes"] * 60, options["cpu_minutes"] * 60, evaluate, report,
                              clock="cpu")
    clock.init_callback(cast(Any, learner))
    clock.record()  # the untrained policy, as the other variants
    while True:
        learner.train(BC_BATCHES_PER_CHECK)
        if not clock.on_step():
            break
    if clock.curve[-1]["batches"] != learner.batches:
        clock.record()
    return clock.curve


def random_level(options: dict[str, Any], seed: int, out: Path) -> dict[str, float]:
    """The uniform random policy on seed ``seed``'s held-out missions (written to ``random-seed<s>.json``)."""
    env = make_venv(options, eval_seed(seed), 1)
    policy = UniformRandomPolicy(env.action_space, seed=eval_seed(seed))
    env.close()
    result = dict(evaluator({**options, "eval_epsilon": 0.0}, seed)(policy))  # already uniform: greedy only
    write_json(out / f"random-seed{seed}.json", dict(seed=seed, options=options, **result))
    return result


def collect(out: Path, variants: list[str], seeds: list[int]) -> dict[str, list[list[dict[str, float]]]]:
    curves: dict[str, list[list[dict[str, float]]]] = {}
    for variant in variants:
        found = [json.loads(p.read_text())["curve"] for seed in seeds
                 if (p := out / f"{variant}-seed{seed}" / "curve.json").exists()]
        if found:
            curves[variant] = found
    return curves


def collect_records(out: Path, variants: list[str], seeds: list[int], key: str) -> dict[str, list[dict[str, Any]]]:
    """Per variant, the ``key`` record of each seed's ``curve.json`` that has one: ``demos`` (the bot's episodes,
    steps and CPU minutes) or ``loops`` (:func:`final_loops`; runs recorded before it have none)."""
    records: dict[str, list[dict[str, Any]]] = {}
    for variant in variants:
        found = [record for seed in seeds if (p := out / f"{variant}-seed{seed}" / "curve.json").exists()
                 and (record := json.loads(p.read_text()).get(key))]
        if found:
            records[variant] = found
    return records


def loop_lines(loops: dict[str, list[dict[str, Any]]]) -> list[str]:
    """One line per variant and policy: success, and the share of failed episodes that end cycling, mean ± std."""
    lines = []
    for variant, found in loops.items():
        for policy in found[0]:
            runs = [r[policy] for r in found if policy in r]
            success = np.array([r["success_rate"] for r in runs])
            looped = np.array([r["looped"] for r in runs], dtype=float)
            scored = format_mean_std(float(success.mean()), float(success.std()))
            cycled = format_mean_std(float(np.nanmean(looped)), float(np.nanstd(looped)))
            lines.append(f"- {variant}, {policy}: success {scored}; {cycled} of its failures end cycling through at "
                         f"most 4 agent states ({len(runs)} seeds)")
    return lines


def demo_table(records: dict[str, list[dict[str, Any]]]) -> str:
    """The demonstrations each variant learned from, mean ± std over seeds; the bot's CPU minutes are not on the
    curves' clock."""
    header = ["variant", "bot demonstrations", "their steps", "bot CPU minutes (not on the curves' clock)",
              "share of each DQN batch", "seeds"]
    rows = []
    for variant, found in records.items():
        steps = np.array([r["steps"] for r in found], dtype=float)
        minutes = np.array([r["cpu_minutes"] for r in found], dtype=float)
        episodes = sorted({int(r["episodes"]) for r in found})
        rows.append([variant, "/".join(map(str, episodes)), format_mean_std(float(steps.mean()), float(steps.std()), 0),
                     format_mean_std(float(minutes.mean()), float(minutes.std()), 3),
                     f"{found[0]['demo_ratio']:g}" if "demo_ratio" in found[0] else "-", str(len(found))])
    return markdown_table(header, rows)


def summarize(curves: dict[str, list[list[dict[str, float]]]]) -> dict[str, list[dict[str, float]]]:
    """Per variant, mean ± std over seeds at each evaluation index, over the seeds that reached it (``seeds``: a run
    stopped early, e.g. killed, counts up to its last evaluation)."""
    summary: dict[str, list[dict[str, float]]] = {}
    for variant, runs in curves.items():
        rows = []
        for i in range(max(len(c) for c in runs)):
            reached = [c for c in runs if len(c) > i]
            row: dict[str, float] = {"evaluation": i, "seeds": len(reached)}
            keys = ["minutes", "timesteps", "episodes", "success_rate", "goals_reached", "batches", "label_accuracy",
                    *(key for key, _ in stochastic_scores(reached[0][i]))]
            for key in keys:
                if key not in reached[0][i]:  # sampled: ppo's runs only; epsilon: --eval-epsilon's; batches: bc's
                    continue
                values = np.array([c[i][key] for c in reached], dtype=float)
                row[f"{key}_mean"], row[f"{key}_std"] = float(values.mean()), float(values.std())
            rows.append(row)
        summary[variant] = rows
    return summary


def report(out: Path, args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = collect(out, list(args.variants), list(args.seeds))
    summary = summarize(curves)
    # BabyAI's rl_dataeff.py measure: training episodes until the last 100 succeeded at 99 % (None: not reached,
    # with the episodes the run trained on); runs recorded before the count have no "episodes"
    to_99 = {variant: [dict(episodes_to_99=c[-1].get("episodes_to_target"), episodes=c[-1]["episodes"])
                       for c in runs if "episodes" in c[-1]] for variant, runs in curves.items()}
    demos = collect_records(out, list(args.variants), list(args.seeds), "demos")
    randoms = [json.loads(p.read_text())["success_rate"] for seed in args.seeds
               if (p := out / f"random-seed{seed}.json").exists()]
    random_mean = float(np.mean(randoms)) if randoms else None
    loops = collect_records(out, list(args.variants), list(args.seeds), "loops")
    write_json(out / "summary.json", dict(level=args.level, seeds=list(args.seeds), summary=summary,
                                          random_success=randoms, demos=demos,
                                          episodes_to_99={v: r for v, r in to_99.items() if r}, loops=loops))
    random_goals = [json.loads(p.read_text())["goals_reached"] for seed in args.seeds
                    if (p := out / f"random-seed{seed}.json").exists()]
    stochastic = list(dict.fromkeys(score for table in summary.values() for r in table
                                    for score in stochastic_scores(r)))
    header = ["variant", "evaluation", "CPU minutes", "env steps", "success rate", "goals reached", "seeds"]
    header[5:5] = [f"success rate, {label}" for _, label in stochastic]
    labels = any("label_accuracy_mean" in r for table in summary.values() for r in table)  # bc's
    header[-1:-1] = ["bot's held-out actions matched"] if labels else []
    rows = []
    for variant, table in summary.items():
        for r in table:
            steps = (f"- ({r['batches_mean']:.0f} BC batches)" if "batches_mean" in r  # BC takes no env step
                     else f"{r['timesteps_mean'] / 1000:.0f}k"
                     + (f" ({r['episodes_mean']:.0f} episodes)" if r.get("episodes_mean") else ""))
            row = [variant, str(r["evaluation"]), f"{r['minutes_mean']:.1f}", steps,
                   format_mean_std(r["success_rate_mean"], r["success_rate_std"]),
                   format_mean_std(r["goals_reached_mean"], r["goals_reached_std"]), str(r["seeds"])]
            row[5:5] = [format_mean_std(r[f"{key}_mean"], r[f"{key}_std"]) if f"{key}_mean" in r else "-"
                        for key, _ in stochastic]
            if labels:
                row[-1:-1] = [format_mean_std(r["label_accuracy_mean"], r["label_accuracy_std"])
                              if "label_accuracy_mean" in r else "-"]
            rows.append(row)
    if randoms:
        random_row = ["uniform random", "-", "-", "-", format_mean_std(float(np.mean(randoms)), float(np.std(randoms))),
                      format_mean_std(float(np.mean(random_goals)), float(np.std(random_goals))), str(len(randoms))]
        random_row[5:5] = ["-"] * len(stochastic)
        random_row[-1:-1] = ["-"] if labels else []
        rows.append(random_row)
    text = markdown_table(header, rows)
    lines = [f"- {variant}: " + ", ".join(f"{r['episodes_to_99']:.0f}" if r["episodes_to_99"] is not None
                                          else f"not reached in {r['episodes']:.0f}" for r in runs)
             for variant, runs in to_99.items() if runs]
    if lines:
        text += ("\n\nTraining episodes until the last 100 succeeded at 99 % (BabyAI's rl_dataeff.py), per seed:\n"
                 + "\n".join(lines))
    if loops:
        text += ("\n\nThe final models on missions of their own (loops: a failed episode whose last 16 steps hold at "
                 "most 4 agent states):\n" + "\n".join(loop_lines(loops)))
    if demos:
        text += "\n\n" + demo_table(demos)
    with atomic_path(out / "summary.md") as tmp:
        Path(tmp).write_text(text + "\n")
    print(text)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for variant, table in summary.items():
        x = np.array([r["minutes_mean"] for r in table])
        mean = np.array([r["success_rate_mean"] for r in table])
        std = np.array([r["success_rate_std"] for r in table])
        full = np.array([r["seeds"] for r in table]) == table[0]["seeds"]  # every seed; then a dotted tail
        (line,) = ax.plot(x[full], mean[full], "o-", label=f"{variant} ({table[0]['seeds']} seeds)")
        ax.fill_between(x[full], (mean - std)[full], (mean + std)[full], alpha=0.2, color=line.get_color())
        for key, label in stochastic_scores(table[0]):  # the same policy acting stochastically
            sampled_mean = np.array([r[f"{key}_mean"] for r in table])
            sampled_std = np.array([r[f"{key}_std"] for r in table])
            ax.plot(x[full], sampled_mean[full], "s--", color=line.get_color(), label=f"{variant}, {label}")
            ax.fill_between(x[full], (sampled_mean - sampled_std)[full], (sampled_mean + sampled_std)[full],
                            alpha=0.1, color=line.get_color())
        if not full.all():
            tail = np.flatnonzero(~full)
            tail = np.concatenate([tail[:1] - 1, tail])
            ax.plot(x[tail], mean[tail], "o:", color=line.get_color(),
                    label=f"{variant}, fewer seeds (see the table)")
    if random_mean is not None:
        ax.axhline(random_mean, color="grey", ls="--", lw=1, label="uniform random")
    ax.set_xlabel("CPU minutes per run (one core each)")
    ax.set_ylabel("success rate (held-out missions)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    window = f"DQN + history {args.history}" if args.history else "DQN, no window"
    learners = [*([window] if set(summary) & set(DQN_VARIANTS) else []),
                *(["BC"] if "bc" in summary else []),
                *(["RecurrentPPO"] if "ppo" in summary else []), *(["PPO"] if "ppo-mlp" in summary else [])]
    counts = sorted({int(r["episodes"]) for found in demos.values() for r in found})
    taught = f", {'/'.join(map(str, counts))} bot demonstrations" if counts else ""
    ax.set_title(f"{', '.join(learners)} on {args.level} (k_max {args.k_max}{taught}): mean ± std", fontsize=9)
    fig.tight_layout()
    with atomic_path(out / "summary.png") as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)


def revisits(policy: Any, options: dict[str, Any], seed: int, episodes: int) -> dict[str, float]:
    """Play ``episodes`` held-out missions one at a time and measure, in the failed ones, how often the agent is
    in an agent state (cell, direction) it already had: near 0 for a search that keeps moving, near 1 for a loop.

    ``revisit``: the share of a failed episode's steps whose agent state was visited before in that episode;
    ``looped``: the share of failed episodes whose last 16 steps hold at most 4 agent states (a cycle in place)."""
    venv = make_venv(options, eval_seed(seed) + 7919, 1)  # its own missions: the scores above keep theirs
    base: Any = venv.envs[0].unwrapped  # BabyAI's MiniGridEnv (minigrid ships no types)
    failed_revisit: list[float] = []
    looped, successes = 0, 0
    obs = venv.reset()
    for _ in range(episodes):
        states: list[tuple[int, int, int]] = []
        done, info = False, {}
        state, start = None, np.ones(1, dtype=bool)
        while not done:
            action, state = policy.predict(obs, state=state, episode_start=start, deterministic=True)
            obs, _, dones, infos = venv.step(action)
            done, info, start = bool(dones[0]), infos[0], dones
            if not done:
                states.append((int(base.agent_pos[0]), int(base.agent_pos[1]), int(base.agent_dir)))
        if info.get("is_success"):
            successes += 1
            continue
        seen: set[tuple[int, int, int]] = set()
        repeats = 0
        for s in states:
            repeats += s in seen
            seen.add(s)
        failed_revisit.append(repeats / max(len(states), 1))
        looped += len(set(states[-16:])) <= 4
    venv.close()
    failures = episodes - successes
    return {"success_rate": successes / episodes, "failures": failures,
            "revisit": float(np.mean(failed_revisit)) if failed_revisit else float("nan"),
            "looped": looped / failures if failures else float("nan")}


def diagnose(options: dict[str, Any], steps: int, epsilons: list[float], seed: int) -> None:
    """Train one "some" run for ``steps`` env steps, then score the same model greedy and epsilon-greedy on the
    held-out missions: how much of a low greedy score is the policy looping (a little noise escapes a loop). The
    same policies and the uniform random one then play other missions with their agent states tracked
    (:func:`revisits`), which measures the loops directly."""
    seed_process(seed)
    model = build_model(options, "some", seed)
    model.learn(steps)
    env = make_venv(options, eval_seed(seed), 1)
    space = env.action_space
    env.close()
    policies: list[tuple[str, Any]] = []
    for epsilon in epsilons:
        policy = model if epsilon == 0 else EpsilonGreedy(model, space, epsilon, seed=eval_seed(seed))
        policies.append((f"epsilon {epsilon}", policy))
        score = evaluator(options, seed)(policy)
        print(f"{options['level']} after {model.num_timesteps} steps, epsilon {epsilon}: success "
              f"{score['success_rate']:.3f}, goals reached {score['goals_reached']:.2f}", flush=True)
    policies.append(("uniform random", UniformRandomPolicy(space, seed=eval_seed(seed))))
    for name, policy in policies:
        r = revisits(policy, options, seed, options["eval_episodes"])
        print(f"{options['level']} agent states, {name}: success {r['success_rate']:.3f}; in its "
              f"{r['failures']} failed episodes, {r['revisit']:.2f} of steps revisit an agent state and "
              f"{r['looped']:.2f} end cycling through at most 4 states", flush=True)


def parse_options(argv: list[str] | None = None) -> tuple[argparse.Namespace, dict[str, Any]]:
    """The command line, checked, and the runs' options (what every run's ``curve.json`` keeps)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--level", default="BabyAI-GoToLocal-v0", help="a BabyAI go-to level's gymnasium id")
    parser.add_argument("--k-max", type=int, default=1, help="goal slots (4 for the GoToSeq levels)")
    parser.add_argument("--step-reward", type=float, default=0.0, help="reward of every step on top of goals")
    parser.add_argument("--cpu-minutes", type=float, default=60.0, help="CPU time per run, evaluations included")
    parser.add_argument("--eval-minutes", type=float, default=6.0, help="CPU time between evaluations")
    arguments.add_eval_episodes(parser, 100)
    arguments.add_history(parser, 16)
    parser.add_argument("--encoder", default="conv", choices=["conv", "gru"], help="the window's encoder")
    parser.add_argument("--no-goal", action="store_true",
                        help="ablation: the learners read the observation and its window, not the goals (how much "
                             "of their success reads the instruction)")
    parser.add_argument("--extractor", default="flat", choices=["flat", "film"],
                        help="the current step's encoder (DQN and BC): flat (the codes as features, "
                             "KeySelectExtractor) or film (sb3_hir_minigrid.BabyAIFiLMExtractor: the grid's codes "
                             "embedded and convolved under FiLM blocks conditioned on the goals)")
    parser.add_argument("--steps", type=int, default=400_000, help="planned env steps (buffer size, exploration)")
    arguments.add_n_envs(parser, 8)
    arguments.add_learner(parser, gamma=0.97, learning_rate=5e-4, gradient_steps=4, exploration_fraction=0.15)
    parser.add_argument("--n-steps", type=int, default=3, help="n-step returns of the buffer")
    parser.add_argument("--target-update-interval", type=int, default=2_000, help="DQN's, in env steps")
    parser.add_argument("--exploration-final-eps", type=float, default=0.05, help="DQN's")
    arguments.add_seeds(parser, [0, 1, 2])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=["some", "none"],
                        help="some, none (DQN with and without relabeling), ppo (RecurrentPPO) and ppo-mlp (plain "
                             "PPO with VecNormalize), both at rl-zoo3's MiniGrid settings, and bc (BC on the --demos "
                             "bot demonstrations); default some none")
    parser.add_argument("--ppo-normalize", default="obs-reward", choices=["obs-reward", "obs", "none"],
                        help="ppo-mlp's VecNormalize: rl-zoo3's (observations and rewards), observations only, or "
                             "none")
    parser.add_argument("--demos", type=int, default=0, metavar="N",
                        help="N episodes of BabyAI's bot (the sb3-hir-minigrid plugin's 'babyai-bot', minigrid >= "
                             "3.0) per seed, collected in the training env stack with their own seed: in the DQN "
                             "variants' replay buffer (its demonstrations) and bc's data, the same episodes for "
                             "both; the bot's CPU time is reported apart from the learner's clock (default 0)")
    parser.add_argument("--demo-ratio", type=float, default=None, metavar="R",
                        help="share of each DQN batch served from the demonstrations (default, with --demos: "
                             f"{DEFAULT_DEMO_RATIO:g}, sb3-hir train's)")
    arguments.add_ray(parser, "(variant, seed) runs")
    parser.add_argument("--collect", action="store_true", help="rebuild --out's summary from its runs and exit")
    parser.add_argument("--diagnose", type=int, metavar="STEPS", default=None,
                        help="train one 'some' run (first seed) for STEPS env steps, then score it greedy and "
                             "epsilon-greedy (--epsilons) and exit")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.0, 0.05, 0.2])
    parser.add_argument("--eval-epsilon", type=float, default=0.0, metavar="E",
                        help="also score the DQN and BC variants epsilon-greedy with this epsilon at every "
                             "evaluation (as DQN's papers evaluate; the curves name it), beside greedy (default 0: "
                             "greedy only)")
    parser.add_argument("--out", default="babyai_goto")
    args = parser.parse_args(argv)
    if not args.collect:
        check_demo_args(parser, args)
        if args.no_goal and args.extractor == "film":
            parser.error("--extractor film is conditioned on the goals, and --no-goal removes them: use "
                         "--extractor flat for the ablation")
        if not 0.0 <= args.eval_epsilon < 1.0:
            parser.error(f"--eval-epsilon must be in [0, 1) (the chance of a uniform action), "
                         f"got {args.eval_epsilon:g}")
    options = {k: v for k, v in vars(args).items()
               if k not in ("seeds", "variants", "ray", "ray_address", "cpus_per_trial", "collect", "out", "diagnose",
                            "epsilons")}
    return args, options


def check_demo_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--demos`` and ``--demo-ratio`` against ``--variants``; ``--demo-ratio`` resolved in ``args`` (0 without
    demonstrations)."""
    if args.demos < 0:
        parser.error(f"--demos must be >= 0, got {args.demos}")
    on_policy = [v for v in args.variants if v in PPO_VARIANTS]
    if args.demos and on_policy:
        parser.error(f"--demos fills a replay buffer with the bot's episodes, and --variants {' '.join(on_policy)} "
                     "is on-policy PPO, which has none: run it without --demos (some, none and bc take them)")
    if "bc" in args.variants and args.demos < 1:
        parser.error("--variants bc is BC on the bot's demonstrations: give it --demos N with N >= 1")
    if args.demo_ratio is None:
        args.demo_ratio = DEFAULT_DEMO_RATIO if args.demos else 0.0
    elif not 0.0 <= args.demo_ratio <= 1.0:
        parser.error(f"--demo-ratio must be a number in [0, 1] (the share of each DQN batch from demonstrations), "
                     f"got {args.demo_ratio:g}")
    elif not args.demos or not set(args.variants) & set(DQN_VARIANTS):
        parser.error(f"--demo-ratio {args.demo_ratio:g} is the share of each DQN batch served from demonstrations: "
                     "it needs --demos N and a DQN variant (some, none)")
    if args.demos:
        from sb3_hir_minigrid.bot import BotUnavailableError, check_bot_available

        try:
            check_bot_available()
        except BotUnavailableError as exc:
            parser.error(str(exc))


def main(argv: list[str] | None = None) -> None:
    args, options = parse_options(argv)
    out = Path(args.out).resolve()
    if args.collect:
        report(out, args)
        return
    if args.diagnose:
        diagnose(options, args.diagnose, args.epsilons, args.seeds[0])
        return
    for seed in args.seeds:
        print(f"uniform random, seed {seed}: {random_level(options, seed, out)}", flush=True)
    configs = [dict(options=options, variant=variant, seed=seed, out=str(out))
               for seed in args.seeds for variant in args.variants]
    for result in run_all(run_trial, configs, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial,
                          address=args.ray_address, name="babyai_goto"):
        print(f"done: {result['variant']} seed {result['seed']}", flush=True)
    report(out, args)


if __name__ == "__main__":
    main()
