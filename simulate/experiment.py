"""A whole simulation: data -> environment -> competitors x seeds -> report, CSV, plots."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from banditree import __version__
from banditree.datasets import Dataset
from banditree.datasets.sources import TaskChoice, load_source
from banditree.datasets.tables import contexts_of
from banditree.learners import build_learner
from banditree.learners.config import default_kind
from simulate.agents import full_information_twin, learner_config, linear_baseline
from simulate.drift import drift_report, drift_streams, stream_targets
from simulate.environments import Environment, FeedbackMode, make_environment
from simulate.plots import write_plots
from simulate.report import (
    LearnerRun,
    build_report,
    write_curves_csv,
    write_decisions_csv,
    write_report,
)
from simulate.runner import Agent, SeedTrace, evaluation_rounds, run_stream, stream_order
from simulate.tree_ensemble import Rule, TreeEnsembleAgent, lightgbm_available
from simulate.vw import (
    SIMULATOR_VW,
    VowpalWabbitAgent,
    simulator_vw_arguments,
    vowpalwabbit_available,
)

#: ``vw``: VW's RegCB-opt; ``vw-epsilon``: VW's epsilon-greedy (the DGT paper's 0.3, or
#: ``--explore``); ``teucb`` / ``tets``: :mod:`simulate.tree_ensemble`
BASELINES = ("random", "linear", "vw", "vw-epsilon", "teucb", "tets")
#: the baselines run unless ``--baselines`` names others
DEFAULT_BASELINES = ("random", "linear", "vw")
#: the baselines that read numeric contexts in process, bandit classification only
_EXTERNAL = {*SIMULATOR_VW, "teucb", "tets"}


@dataclass
class SimulationOptions:
    """Everything ``banditree simulate`` takes (names as on the command line)."""

    data: str
    model: str | None  # None: the LearnerConfig default for the task (a warm start: dgt)
    out: Path
    label: str | None = None
    categorical: tuple[str, ...] = ()
    schema: Path | None = None
    task: TaskChoice = "auto"
    split: int = 0
    feedback: FeedbackMode | None = None
    loss: str | None = None
    huber_xi: float = 1.0
    loss_matrix: Path | None = None
    passes: int = 1
    rounds: int | None = None
    seeds: int = 3
    baselines: list[str] = field(default_factory=lambda: list(DEFAULT_BASELINES))
    explore: float | None = None
    #: learner config fields set on the command line (the rest: the config's defaults)
    config: dict[str, Any] = field(default_factory=dict)
    vw_learning_rate: float | None = None
    eval_points: int = 12
    log_decisions: bool = False
    server: str | None = None
    concurrency: int = 1
    api_key: str | None = None
    #: HTTP mode: leave the models on the service when the run ends (for the console)
    keep_models: bool = False
    progress: bool = True
    warm_start: Path | None = None
    drift: str | None = None
    drift_at: int | None = None


@dataclass
class Competitor:
    name: str
    kind: str
    env: Environment
    make: Callable[[int], Agent]
    config: Callable[[int], dict[str, Any]]
    over_http: bool = False


def _competitors(
    options: SimulationOptions, dataset: Dataset, env: Environment, notices: list[str]
) -> tuple[list[Competitor], str]:
    def config_for(kind: str, environment: Environment) -> Callable[[int], dict[str, Any]]:
        def config(seed: int) -> dict[str, Any]:
            return learner_config(
                kind=kind,
                dataset=dataset,
                env=environment,
                explore=options.explore,
                config=options.config,
                seed=seed,
            )

        return config

    def local(kind: str, environment: Environment, *, baseline: bool = False) -> Competitor:
        cfg = config_for(kind, environment)
        if baseline and kind == "linear" and dataset.task == "regression":
            return Competitor(kind, kind, environment, lambda s: linear_baseline(cfg(s)), cfg)
        return Competitor(kind, kind, environment, lambda s: build_learner(cfg(s)), cfg)

    def remote(name: str, kind: str) -> Competitor:
        from simulate.http_agent import HttpAgent

        cfg = config_for(kind, env)
        server, key, base = options.server, options.api_key, f"sim-{dataset.name}-{name}"
        assert server is not None
        return Competitor(
            name,
            kind,
            env,
            lambda s: HttpAgent(
                server, f"{base}-s{s}", cfg(s), api_key=key, keep=options.keep_models
            ),
            cfg,
            True,
        )

    model = options.model
    assert model is not None  # resolved by simulate()
    main = remote(model, model) if options.server else local(model, env)
    runs = [main]
    if options.warm_start is not None:
        runs.append(_warm_competitor(options, env, config_for(model, env)))
    reference = main.name
    if env.mode != "full":
        twin = local(model, full_information_twin(env))
        twin.name = reference = f"{model}_full_information"
        runs.append(twin)
    for baseline in options.baselines:
        if baseline not in BASELINES:
            raise ValueError(f"--baselines: unknown baseline {baseline!r}; choose from {BASELINES}")
        if baseline == options.model:
            notices.append(f"baseline {baseline} skipped: it is the model under test")
        elif baseline in ("random", *_EXTERNAL) and (
            dataset.task != "classification" or env.mode == "full"
        ):
            notices.append(f"baseline {baseline} skipped: it needs bandit classification")
        elif baseline in _EXTERNAL and dataset.schema is not None:
            notices.append(
                f"baseline {baseline} skipped: it reads numeric contexts, this data has a schema"
            )
        elif baseline in SIMULATOR_VW and not vowpalwabbit_available():
            notices.append(
                f"baseline {baseline} skipped: vowpalwabbit is not installed "
                "(pip install banditree[vw])"
            )
        elif baseline in ("teucb", "tets") and not lightgbm_available():
            notices.append(
                f"baseline {baseline} skipped: lightgbm is not installed (pip install banditree[sim])"
            )
        elif baseline in SIMULATOR_VW:
            runs.append(_vw_competitor(baseline, dataset, env, options))
        elif baseline in ("teucb", "tets"):
            runs.append(_tree_ensemble_competitor(baseline, dataset, env))
        else:
            runs.append(
                remote(baseline, baseline)
                if options.server
                else local(baseline, env, baseline=True)
            )
    return runs, reference


def _warm_competitor(
    options: SimulationOptions, env: Environment, cfg: Callable[[int], dict[str, Any]]
) -> Competitor:
    """``<model>_warm_start``: the model started from a ``banditree train`` file (in process)."""
    from banditree.models.dgt.trained import TrainedTree

    assert options.warm_start is not None and options.model is not None
    trained = TrainedTree.load(options.warm_start)
    name = f"{options.model}_warm_start"
    return Competitor(
        name, options.model, env, lambda s: build_learner(cfg(s), initial_model=trained), cfg
    )


def _vw_competitor(
    name: str, dataset: Dataset, env: Environment, options: SimulationOptions
) -> Competitor:
    epsilon = options.explore if name == "vw-epsilon" else None
    algorithm = simulator_vw_arguments(name, dataset.n_classes, epsilon, options.vw_learning_rate)
    k = dataset.n_classes
    # z-scored with the training split's statistics, as benchmarks.bandit_vs_vw's VW
    mean, sd = dataset.X_train.mean(axis=0), dataset.X_train.std(axis=0)
    sd[sd == 0.0] = 1.0
    return Competitor(
        name,
        name,
        env,
        lambda s: VowpalWabbitAgent(k, algorithm=algorithm, seed=s, scale=(mean, sd)),
        lambda s: {"arguments": f"{algorithm} --random_seed {s}", "features": "z-scored"},
    )


def _tree_ensemble_competitor(name: str, dataset: Dataset, env: Environment) -> Competitor:
    k, d = dataset.n_classes, dataset.n_features
    rule: Rule = "ucb" if name == "teucb" else "ts"
    return Competitor(
        name,
        name,
        env,
        lambda s: TreeEnsembleAgent(k, d, rule=rule, seed=s),
        lambda s: {"rule": rule, "n_trees": 50, "depth": 6, "first_fit": 100, "growth": 1.1},
    )


def simulate(options: SimulationOptions) -> dict[str, Any]:
    """Run the simulation described by ``options``; write its files under ``options.out``."""
    from tqdm import tqdm

    if options.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {options.seeds}")
    if options.concurrency < 1:
        raise ValueError(f"--concurrency must be >= 1, got {options.concurrency}")
    dataset = load_source(
        options.data,
        label=options.label,
        task=options.task,
        split=options.split,
        categorical=options.categorical,
        schema=options.schema,
    )
    X_train, X_test = dataset.X_train, dataset.X_test
    if dataset.schema is not None:  # named features: the learners read JSON contexts
        X_train, X_test = contexts_of(dataset, X_train), contexts_of(dataset, X_test)
    if options.warm_start is not None and "height" not in options.config:
        from banditree.models.dgt.trained import TrainedTree

        # the cold model grows to the warm start's height, so that the two compare
        height = TrainedTree.load(options.warm_start).height
        options = replace(options, config={**options.config, "height": height})
    if options.model is None:
        model = "dgt" if options.warm_start is not None else default_kind(dataset.task)
        options = replace(options, model=model)
    env = make_environment(dataset.task, options, dataset.n_classes)
    notices: list[str] = []
    competitors, reference = _competitors(options, dataset, env, notices)
    n_train = len(dataset.y_train)
    orders = [
        stream_order(n_train, passes=options.passes, rounds=options.rounds, seed=s)
        for s in range(options.seeds)
    ]
    eval_at = evaluation_rounds(len(orders[0]), options.eval_points)
    drift = drift_streams(options.drift, options.drift_at, dataset, orders)
    traces: dict[str, list[SeedTrace]] = {c.name: [] for c in competitors}
    total = len(orders[0]) * options.seeds * len(competitors)
    with tqdm(total=total, disable=not options.progress, unit="round", desc="simulate") as bar:
        for seed, order in enumerate(orders):
            for c in competitors:
                agent = c.make(seed)
                try:
                    traces[c.name].append(
                        run_stream(
                            agent,
                            c.env,
                            X=X_train,
                            y=dataset.y_train,
                            order=order,
                            eval_at=eval_at,
                            X_test=X_test,
                            y_test=dataset.y_test,
                            seed=seed,
                            concurrency=options.concurrency if c.over_http else 1,
                            log_decisions=options.log_decisions and c.name == competitors[0].name,
                            on_rounds=bar.update,
                            **(drift[seed] if drift else {}),
                        )
                    )
                finally:
                    close = getattr(agent, "close", None)
                    if close is not None:
                        close()
    runs = [
        LearnerRun(c.name, c.kind, c.env.mode, c.env.queries_per_round, traces[c.name], c.config(0))
        for c in competitors
    ]
    constant = [env.constant_losses(t) for t in stream_targets(drift, dataset.y_train, orders)]
    header = {
        "task": dataset.task,
        "dataset": dataset.name,
        "n_train": n_train,
        "n_test": len(dataset.y_test),
        "n_features": dataset.n_features,
        "features": dataset.schema,
        "n_actions": dataset.n_classes or None,
        "seeds": list(range(options.seeds)),
        "model": options.model,
        "feedback": env.mode,
        "loss": options.loss or ("zero_one" if dataset.task == "classification" else "squared"),
        "passes": options.passes,
        "rounds": len(orders[0]),
        "server": options.server,
        "concurrency": options.concurrency,
        "notices": notices,
        "banditree_version": __version__,
        "options": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in asdict(options).items()
            if k != "api_key"
        },
    }
    report = build_report(
        runs, reference=reference, task=dataset.task, header=header, constant_losses=constant
    )
    if drift:
        report["drift"] = drift_report(options.drift, options.drift_at, len(orders[0]), traces)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    files = [write_curves_csv(report, dataset.task, out), *write_plots(report, out)]
    if options.log_decisions:
        files.append(write_decisions_csv(traces[competitors[0].name], dataset.X_train, out))
    report["files"] = ["report.json", *(f.name for f in files)]
    write_report(report, out)
    return report
