"""Research code the benchmark scripts share, kept out of the ``sb3-hir`` wheel.

The wheel holds the library and the generic benchmark harness (:mod:`sb3_hir.experiment`: specs, seeds, budgets,
the runner, records and tables). What only these scripts run lives here, importable by a script in ``benchmarks/``
(its directory is first on ``sys.path``) and by the Ray workers of its trials (the runner puts that directory on
their path):

* :mod:`research.moonshot`: the moonshot's learner, which ``moonshot_mazerunner.py``, ``moonshot_seeds.py`` and
  ``bench_controls.py`` run;
* :mod:`research.relaxed`: the relaxed draw of the moonshot, a draw strategy of its own (the worked example of
  ``docs/guide/draw_strategies.md``);
* :mod:`research.maze`: the MazeRunner size options of the MazeRunner scripts.

The scripted PointMaze and FetchPush experts are expert plugins of ``sb3-hir-robotics``.
"""
