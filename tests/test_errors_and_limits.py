"""One error base class, the limits shared by many commands checked in one place, and the
engines chosen from one registry."""

from __future__ import annotations

import pytest

import frictionsim as fs
from frictionsim import limits
from frictionsim.errors import ConfigurationError, FrictionsimError, MissingExtra
from frictionsim.experiments.runner import cli


def test_the_projects_errors_derive_from_one_base_and_keep_their_builtin_one():
    from frictionsim.actuator_files import ActuatorFileError
    from frictionsim.hw.ethercat.drive import EthercatError
    from frictionsim.hw.serialbus.errors import BusError
    from frictionsim.hw.servo import ServoError
    from frictionsim.logs import LogError
    from frictionsim.params import ParameterFileError
    from frictionsim.robot_files import RobotFileError
    from frictionsim.robot_recordings import RecordingError
    from frictionsim.solvers.errors import SimulationError
    from frictionsim.solvers.mjcf_export import NotExportable

    for error, builtin in [(LogError, ValueError), (ParameterFileError, ValueError),
                           (ActuatorFileError, ValueError), (RobotFileError, ValueError),
                           (RecordingError, ValueError), (ConfigurationError, ValueError),
                           (NotExportable, ValueError), (SimulationError, ArithmeticError),
                           (ServoError, RuntimeError), (BusError, RuntimeError),
                           (EthercatError, RuntimeError), (MissingExtra, ImportError)]:
        assert issubclass(error, FrictionsimError) and issubclass(error, builtin), error
    assert fs.FrictionsimError is FrictionsimError


def test_the_compiled_kernels_raise_the_projects_errors():
    import numpy as np

    from frictionsim.solvers.fixed_step import step

    with pytest.raises(ConfigurationError, match="theta"):
        step(0.0, 0.0, 1.0, 1.0, 0.005, np.zeros(3), np.zeros(10))


@pytest.mark.parametrize("error,code,says", [
    (ConfigurationError("--budget must be an integer in [1, 10]"), 1, "error: --budget"),
    (FileNotFoundError(2, "No such file or directory", "missing.json"), 1, "error: "),
    (KeyError("oops"), 2, "internal error: KeyError"),
    (ValueError("a numpy complaint"), 2, "internal error: ValueError"),
    (OSError("no file named"), 2, "internal error: OSError"),
])
def test_the_command_line_tells_a_users_error_from_a_bug(error, code, says, monkeypatch,
                                                          capsys):
    """frictionsim's errors and a file the system refused are the user's (one line, 1);
    anything else is a bug (2), with how to report it."""
    def run(args):
        raise error

    monkeypatch.setattr(cli, "_run_with_sound_cache", run)
    monkeypatch.delenv("FRICTIONSIM_DEBUG", raising=False)
    assert cli.main(["bench"]) == code
    err = capsys.readouterr().err
    assert says in err
    assert ("this is a bug" in err) == (code == 2)
    assert len(err.strip().splitlines()) == (1 if code == 1 else 2)


def test_budgets_and_counts_are_checked_in_one_place():
    assert limits.check_budget(3000) == 3000
    for bad in (0, limits.MAX_BUDGET + 1, 2.5, True, "300"):
        with pytest.raises(ConfigurationError, match=r"--budget must be an integer in \[1, "):
            limits.check_budget(bad)
    with pytest.raises(ConfigurationError, match="--folds must be an integer in"):
        limits.check_count("--folds", 1, 2, 10)


def test_a_control_period_is_a_whole_number_of_physics_steps_or_refused():
    from frictionsim.schedule import ControlSchedule

    schedule = ControlSchedule.of(0.005, 0.001)
    assert schedule.substeps == 5
    assert [schedule.due(k) for k in range(7)] == [True, False, False, False, False, True, False]
    assert ControlSchedule.of(0.006, 0.002).substeps == 3
    for period, step in [(0.0045, 0.001), (0.005, 0.002), (0.0005, 0.001), (0.005, 0.0),
                         (float("nan"), 0.001)]:
        with pytest.raises(ConfigurationError, match="whole number of the model's timestep"):
            ControlSchedule.of(period, step)
    for period, step in [("0.005", 0.001), (0.005, None), (True, 0.001)]:
        with pytest.raises(ConfigurationError, match="must be a number of seconds"):
            ControlSchedule.of(period, step)


@pytest.mark.parametrize("argv", [["identify", "--actuator", "xl330", "--model", "m1",
                                   "--logs", "x", "--budget", "0"],
                                  ["robot", "identify", "--robot", "so101", "--model", "m1",
                                   "--recordings", "x", "--budget", "0"],
                                  ["demo", "--budget", "0"]])
def test_every_command_refuses_a_budget_the_same_way(argv, capsys):
    assert cli.main(argv) == 1
    assert "--budget must be an integer in [1, 10,000,000] loss evaluations, got 0" \
        in capsys.readouterr().err


def test_the_engines_come_from_one_registry():
    from frictionsim.experiments import api
    from frictionsim.experiments.commands import robot
    from frictionsim.experiments.robots import arm2r, recorded
    from frictionsim.solvers.engines import ENGINES, engine_names, get_engine

    assert api.ENGINES == engine_names("bench")
    assert set(robot.ENGINES) == set(recorded.ENGINES) | set(recorded.BATCHED_ENGINES) \
        == set(engine_names("robot"))
    assert set(robot.BATCHED) == set(recorded.BATCHED_ENGINES) == {"mjlab", "mjx"}
    assert set(arm2r.REGISTRY_NAMES.values()) <= set(ENGINES)
    assert "mjcf" not in engine_names("bench")
    with pytest.raises(ConfigurationError, match="expected one of fixed_step"):
        get_engine("euler")
    with pytest.raises(ConfigurationError, match="engine 'mjcf'"):
        get_engine("mjcf", "bench")


def test_every_robot_engine_answers_with_one_result_type():
    pytest.importorskip("mujoco")
    import numpy as np

    from frictionsim.solvers.engines import ENGINES
    from frictionsim.solvers.mujoco_adapter import bench_mjcf
    from frictionsim.solvers.robot import JointServo, RobotRun

    servo = JointServo("servo", fs.ParameterSet.defaults("m1", "xl330"), kp=400.0)
    goals = np.full((40, 1), 0.3)
    runs = {}
    for name, engine in ENGINES.items():
        mjcf = bench_mjcf(0.3, 0.12, 0.0, 0.001)
        if name == "mjcf":  # the model's own actuator: a position servo
            mjcf = mjcf.replace('<motor name="servo" joint="servo"/>',
                                '<position name="servo" joint="servo" kp="2"/>')
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs[name] = engine.robot(mjcf, [servo], 0.005).run(goals)
        run = runs[name]
        assert isinstance(run, RobotRun) and run.q.shape == (40, 1) and run.physical is not None
        assert run.q[-1, 0] > 0.05, name  # it moved towards the goal
    assert np.abs(runs["mujoco"].q - runs["fixed_step"].q).max() < 1e-3
