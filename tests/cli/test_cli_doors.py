"""Every door of the CLI answers in one ``error:`` line, exit code 2, no traceback (issue 55).

A flag whose extra is missing, an ``--algo-kwarg`` value SB3 would read only late, a search space with a bad edge,
an env or component whose plugin is not installed: each names the flag and what is accepted, or what to install,
before anything runs. A sweep whose trial failed says so in its exit code, and ``sb3-hir plugins`` repeats what
loading the plugins warned about.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sb3_hir import cli, extras
from sb3_hir import plugins as plugin_registry
from sb3_hir.cli import sweep
from sb3_hir.cli import train as train_command
from sb3_hir.cli.common import ALGOS, algo_class
from sb3_hir.hookspecs import HOOKS, hookimpl

# The command line drives the library through its public API, which the rest of the suite tests in both profiles
# (tests/conftest.py); its Ray test runs with the other Ray tests.
pytestmark = pytest.mark.once("dagger")

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
TINY = ["--timesteps", "50", "--n-envs", "1", "--eval-episodes", "1", "--maze-size", "7", "--goals", "2",
        "--time-limit", "10"]

#: Python that runs ``sb3_hir.cli.main(argv)`` (or ``code``) as if the top-level packages ``absent`` were not
#: installed: imports of them fail and ``find_spec`` does not find them, as in an install without the extra.
WITHOUT = """
import importlib.abc, importlib.util, json, sys
absent = set(json.loads(sys.argv[1]))
class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in absent:
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
sys.meta_path.insert(0, _Absent())
importlib.util.find_spec = (lambda f: lambda name, *a: None if name.split('.')[0] in absent else f(name, *a))(
    importlib.util.find_spec)
"""


def run_without(absent: list[str], argv: list[str], code: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    body = code or "from sb3_hir.cli import main\nsys.exit(main(sys.argv[2:]))\n"
    return subprocess.run([sys.executable, "-c", WITHOUT + body, json.dumps(absent), *argv], capture_output=True,
                          text=True, env={**ENV, **env}, timeout=300)


def one_error_line(err: str) -> str:
    """The one line of stderr, which is an ``error:`` line and no traceback."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# ---------------------------------------------------------------------------------------------------- 1. extras
@pytest.mark.parametrize(("argv", "flag"), [
    (["--demos", "2"], "--demos"),
    (["--demos-from", "runs/dagger/scratch"], "--demos-from"),
])
def test_a_flag_needing_a_missing_extra_names_the_flag_and_the_install_command(tmp_path, argv, flag):
    proc = run_without(["imitation"], ["train", *TINY, *argv, "--out", str(tmp_path / "run")])
    assert proc.returncode == 2, proc.stderr
    hint = extras.install_hint("imitation")
    expected = f"sb3-hir train: error: {flag} needs imitation, which is not installed: {hint}"
    assert one_error_line(proc.stderr) == expected
    assert not (tmp_path / "run").exists()


def test_dagger_without_its_extra_answers_the_same_way():
    proc = run_without(["imitation"], ["dagger"])
    assert proc.returncode == 2
    assert one_error_line(proc.stderr) == ("sb3-hir dagger: error: sb3-hir dagger needs imitation, which is not "
                                           f"installed: {extras.install_hint('imitation')}")


# ---------------------------------------------------------------------------------------------------- 2. ranges
DQN_CASES = [
    ("gamma=1.5", "--algo-kwarg gamma must be a number in [0, 1]; got 1.5 (the discount factor)"),
    ("batch_size=0", "--algo-kwarg batch_size must be an int >= 1; got 0 (transitions per gradient step)"),
    ("tau=1.5", "--algo-kwarg tau must be a number in [0, 1]; got 1.5 (the soft update coefficient, 1 for a hard "
                "update)"),
    ("exploration_fraction=2", "--algo-kwarg exploration_fraction must be a number in [0, 1]; got 2 (the share of "
                               "training over which epsilon falls)"),
    ("exploration_final_eps=-0.1", "--algo-kwarg exploration_final_eps must be a number in [0, 1]; got -0.1 "
                                   "(epsilon, a probability)"),
    ("train_freq=0", "--algo-kwarg train_freq must be an int >= 1; got 0 (steps between updates, or (N, 'step' | "
                     "'episode'))"),
    ("train_freq=(0, 'episode')", "--algo-kwarg train_freq must be an int >= 1; got 0 (steps between updates, or "
                                  "(N, 'step' | 'episode'))"),
    ("gradient_steps=0", "--algo-kwarg gradient_steps must be an int >= 1; got 0 (gradient steps per update, -1: as "
                         "many as the steps collected)"),
    ("target_update_interval=0", "--algo-kwarg target_update_interval must be an int >= 1; got 0 (steps between "
                                 "target network updates)"),
    ("learning_starts=-1", "--algo-kwarg learning_starts must be an int >= 0; got -1 (steps collected before "
                           "learning starts)"),
    ("max_grad_norm=0", "--algo-kwarg max_grad_norm must be a finite number > 0; got 0 (the gradient clipping "
                        "norm)"),
]


@pytest.mark.parametrize("relabel", ["none", "some"])
@pytest.mark.parametrize(("kwarg", "message"), DQN_CASES)
def test_an_algo_kwarg_out_of_range_is_refused_before_training_with_and_without_relabeling(
        tmp_path, capsys, relabel, kwarg, message):
    out = tmp_path / "run"
    assert cli.main(["train", *TINY, "--no-progress", "--relabel", relabel, "--algo-kwarg", kwarg,
                     "--out", str(out)]) == 2
    assert one_error_line(capsys.readouterr().err) == f"sb3-hir train: error: {message}"
    assert not out.exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--algo", "sac", "--continuous", "--algo-kwarg", "ent_coef=-0.1"],
     "--algo-kwarg ent_coef must be a finite number >= 0; got -0.1 (the entropy bonus)"),
    (["--algo", "tqc", "--continuous", "--algo-kwarg", "top_quantiles_to_drop_per_net=-1"],
     "--algo-kwarg top_quantiles_to_drop_per_net must be an int >= 0; got -1 (TQC's truncated quantiles)"),
    (["--algo", "recurrent-ppo", "--algo-kwarg", "n_steps=0"],
     "--algo-kwarg n_steps must be an int >= 1; got 0 (steps per env of a rollout)"),
    (["--algo", "recurrent-ppo", "--algo-kwarg", "n_epochs=0"],
     "--algo-kwarg n_epochs must be an int >= 1; got 0 (passes over each rollout)"),
    (["--algo", "recurrent-ppo", "--algo-kwarg", "gae_lambda=1.5"],
     "--algo-kwarg gae_lambda must be a number in [0, 1]; got 1.5 (GAE's bias-variance trade-off)"),
    (["--algo", "recurrent-ppo", "--algo-kwarg", "clip_range_vf=0"],
     "--algo-kwarg clip_range_vf must be a finite number > 0; got 0 (the value function's clipping, None for none)"),
    (["--learning-rate", "0"], "--learning-rate must be a finite number > 0; got 0.0 (the optimizer's step size)"),
    (["--n-steps", "0"], "--n-steps must be an int >= 1; got 0"),
    (["--relabel-ratio", "1.5"], "--relabel-ratio must be a number in [0, 1]; got 1.5"),
])
def test_every_algorithm_s_ranges_are_checked_before_training(tmp_path, capsys, argv, message):
    out = tmp_path / "run"
    assert cli.main(["train", *TINY, "--no-progress", "--relabel", "none", *argv, "--out", str(out)]) == 2
    assert one_error_line(capsys.readouterr().err) == f"sb3-hir train: error: {message}"
    assert not out.exists()


@pytest.mark.parametrize("kwarg", ["gradient_steps=-1", "train_freq=(2, 'episode')", "tau=1.0", "gamma=0",
                                   "exploration_fraction=1"])
def test_values_sb3_gives_a_meaning_pass(kwarg):
    args = cli.build_parser().parse_args(["train", "--algo-kwarg", kwarg])
    train_command.check_args(args)


def test_the_range_table_names_only_keywords_some_algorithm_takes():
    import inspect

    from sb3_hir.cli.algo_kwargs import ALGO_KWARG_RANGES

    taken = {name for algo in ALGOS for name in inspect.signature(algo_class(algo).__init__).parameters}
    assert set(ALGO_KWARG_RANGES) <= taken


# ---------------------------------------------------------------------------------------------------- 3. sweep
@pytest.fixture
def no_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep that got past its checks fails the test instead of starting Ray."""

    def started(*args: Any, **kwargs: Any) -> int:
        raise AssertionError("the sweep started its trials")

    monkeypatch.setattr(sweep, "_run_tune", started)


@pytest.mark.parametrize(("argv", "message"), [
    (["--search", "optuna", "--space", "n-steps=choice:0,3"],
     "--space n-steps=0: --n-steps must be an int >= 1; got 0"),
    (["--search", "optuna", "--space", "algo.gamma=uniform:0.9:1.5"],
     "--space algo.gamma=1.5: --algo-kwarg gamma must be a number in [0, 1]; got 1.5 (the discount factor)"),
    (["--search", "optuna", "--space", "hidden=choice:64,128", "--space", "algo.batch_size=choice:64,0"],
     "--space algo.batch_size=0: --algo-kwarg batch_size must be an int >= 1; got 0 (transitions per gradient step)"),
    (["--search", "optuna", "--space", "n-steps=uniform:1:5"],
     "--space n-steps=1.0: argument --n-steps: invalid int value: '1.0'"),
    (["--n-steps", "3", "0"], "n-steps=0: --n-steps must be an int >= 1; got 0"),
    (["--algo-kwarg", "gamma=1.5"], "default: --algo-kwarg gamma must be a number in [0, 1]; got 1.5 (the discount "
                                    "factor)"),
])
def test_every_edge_of_a_sweep_is_checked_before_any_trial(tmp_path, capsys, no_trials, argv, message):
    out = tmp_path / "sweep"
    assert cli.main(["sweep", *TINY, *argv, "--out", str(out)]) == 2
    assert one_error_line(capsys.readouterr().err) == f"sb3-hir sweep: error: {message}"
    assert not out.exists()


@pytest.mark.ray
def test_a_sweep_with_a_failed_trial_exits_non_zero_and_names_it(tmp_path, capsys, shared_ray):
    out = tmp_path / "sweep"
    # 30 goals do not fit a 7x7 maze: only building that trial's env finds out
    argv = ["sweep", "--timesteps", "120", "--n-envs", "2", "--eval-episodes", "2", "--eval-freq", "60",
            "--maze-size", "7", "--relabel", "some", "--goals", "2", "30", "--out", str(out)]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("sb3-hir sweep: error:")]
    assert line.startswith("sb3-hir sweep: error: trial goals=30 seed 0: ") and "num_goals must be <=" in line
    assert f"sb3-hir sweep: 1 of 2 trials failed; their tracebacks are in {out.resolve() / 'tune'}/*/error.txt" in err
    results = json.loads((out / "results.json").read_text())
    assert [r["configuration"] for r in results["configurations"]] == ["goals=2"]  # the other trial finished
    [failure] = results["failed"]
    assert failure.startswith("goals=30 seed 0:")
    assert "failed trials (1):" in (out / "results.md").read_text()


# ---------------------------------------------------------------------------------------------------- 4. providers
def _registrations(module: Any) -> set[tuple[str, str]]:
    """(kind, name) of everything ``module``'s hooks register."""
    found: set[tuple[str, str]] = set()
    for kind, hook in HOOKS.items():
        function = getattr(module, hook, None)
        if function is not None:
            function(lambda name, factory, description=None, kind=kind: found.add((kind, name)))
    return found


def test_the_known_providers_are_what_the_plugins_and_the_extras_register(monkeypatch):
    tomllib = pytest.importorskip("tomllib")
    expected: dict[tuple[str, str], str] = {}
    for pyproject in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        monkeypatch.syspath_prepend(str(pyproject.parent))
        for value in project["entry-points"]["sb3_hir"].values():
            for key in _registrations(importlib.import_module(value)):
                expected[key] = project["name"]
    from sb3_hir import builtin

    with_extras = _registrations(builtin)
    for top in extras.EXTRAS:  # what the built-in plugin registers only when an extra's library is installed
        monkeypatch.setattr(builtin, "has", lambda module, top=top, has=builtin.has: module != top and has(module))
        for key in with_extras - _registrations(builtin):
            expected[key] = top
        monkeypatch.setattr(builtin, "has", extras.has)
    assert expected == plugin_registry.KNOWN_PROVIDERS


def test_an_env_of_a_plugin_not_loaded_names_the_plugin(capsys, monkeypatch):
    monkeypatch.setenv(plugin_registry.LOAD_ENV, "")  # the built-in plugin only, as in a core install
    assert cli.main(["train", "--env", "babyai-goto"]) == 2
    assert one_error_line(capsys.readouterr().err) == (
        "sb3-hir train: error: unknown env 'babyai-goto'; choose from: mazerunner; env 'babyai-goto' comes with the "
        "sb3-hir-minigrid plugin, which is installed but not loaded: see SB3_HIR_LOAD_PLUGINS and "
        "SB3_HIR_BLOCK_PLUGINS, and sb3-hir plugins for broken plugins")


@pytest.mark.parametrize(("argv", "what"), [
    (["train", "--env", "pointmaze-instruction"], "env 'pointmaze-instruction' comes with the sb3-hir-robotics"),
    (["train", "--goal-spec", "distance-threshold"], "goal_spec 'distance-threshold' comes with the sb3-hir-robotics"),
    (["train", "--relabel", "final-goal"], "relabeler 'final-goal' comes with the sb3-hir-example"),
])
def test_a_component_of_a_plugin_not_installed_says_how_to_install_it(capsys, monkeypatch, argv, what):
    monkeypatch.setenv(plugin_registry.LOAD_ENV, "")
    monkeypatch.setattr(plugin_registry, "installed_plugins", lambda: [("builtin", "sb3-hir")])
    assert cli.main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    plugin = what.split(" the ")[1]
    assert line.endswith(f"; {what} plugin, which is not installed: pip install plugins/{plugin} in a checkout of "
                         "sb3-hir"), line


def test_a_beta_schedule_of_a_missing_extra_names_the_extra():
    code = ("from sb3_hir import plugins\n"
            "try:\n    plugins.create('beta_schedule', 'linear')\n"
            "except plugins.UnknownComponentError as exc:\n    print(exc)\n")
    proc = run_without(["imitation"], [], code=code, SB3_HIR_LOAD_PLUGINS="")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "unknown beta_schedule 'linear'; available: none installed; beta_schedule 'linear' comes with sb3-hir's "
        f"'dagger' extra (imitation is not installed): {extras.install_hint('imitation')}")


# ---------------------------------------------------------------------------------------------------- 5. plugins
class _Misspelt:
    @hookimpl
    def register_betaschedules(self, register):  # never called: no such hook
        register("never", object)


MISSPELT = ("sb3-hir plugin 'typo' (sb3-hir-typo) defines unknown hook(s) 'register_betaschedules' (did you mean "
            "'register_beta_schedules'?), which are never called")


@pytest.fixture
def misspelt_distribution(tmp_path: Path) -> Path:
    """An installed plugin (a dist-info on the path) whose one hook is misspelt."""
    dist_info = tmp_path / "sb3_hir_typo-0.0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: sb3-hir-typo\nVersion: 0.0.1\n")
    (dist_info / "entry_points.txt").write_text("[sb3_hir]\ntypo = sb3_hir_typo\n")
    (tmp_path / "sb3_hir_typo.py").write_text("from sb3_hir import hookimpl\n\n\n@hookimpl\n"
                                              "def register_betaschedules(register):\n"
                                              "    register('never', object)\n")
    return tmp_path


@pytest.mark.parametrize("verbose", [[], ["--verbose"]])
def test_sb3_hir_plugins_shows_a_misspelt_hook_s_warning(misspelt_distribution, verbose):
    environ = {**ENV, "PYTHONPATH": os.pathsep.join([str(misspelt_distribution), ENV.get("PYTHONPATH", "")])}
    text = subprocess.run([sys.executable, "-m", "sb3_hir.cli", *verbose, "plugins"], capture_output=True, text=True,
                          env=environ, timeout=120)
    assert text.returncode == 0, text.stderr
    [line] = [line for line in text.stdout.splitlines() if "register_betaschedules" in line]
    assert line.startswith(f"WARNING {MISSPELT}; known hooks: register_relabelers")
    listed = subprocess.run([sys.executable, "-m", "sb3_hir.cli", "plugins", "--json"], capture_output=True,
                            text=True, env=environ, timeout=120)
    [warning] = [w for w in json.loads(listed.stdout)["warnings"] if "register_betaschedules" in w]
    assert warning.startswith(MISSPELT)


def test_the_manager_keeps_its_warnings_for_listings():
    manager = plugin_registry.PluginManager(load_entrypoints=False, environ={})
    with pytest.warns(plugin_registry.PluginWarning, match="register_betaschedules"):
        manager.register(_Misspelt(), name="misspelt")
    [notice] = manager.notices()
    assert notice.startswith("sb3-hir plugin 'misspelt' (in-process) defines unknown hook(s) 'register_betaschedules'")


def test_sb3_hir_plugins_shows_a_misspelt_block_list_entry(capsys, monkeypatch):
    monkeypatch.setenv(plugin_registry.BLOCK_ENV, "minigird")
    assert cli.main(["plugins"]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("WARNING")]
    assert line.startswith("WARNING SB3_HIR_BLOCK_PLUGINS names unknown plugin(s) 'minigird'; installed plugins: ")
