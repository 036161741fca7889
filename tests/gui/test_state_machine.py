"""Random sequences of what a person does, on the real window (hypothesis stateful testing).

Rules: switch preset, Run, Pause, Step, Cancel, Reset, switch tab, save and load a session,
toggle theme and presentation mode. After every step: no exception reached the error relay,
the runner has at most one live thread, and the run controls match the job's state.
Presets run shortened (few steps, small slices) to keep this within a few minutes of CI.
"""

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from gui.error_reporting import error_relay

SHORT_PRESETS = ["fig3-free", "fig3-obstructed", "adam-drift", "fig5-probability", "nonattr-infinity"]
STEPS = 30


class WindowMachine(RuleBasedStateMachine):
    window = None  # one real window for all examples: creating one costs seconds
    qtbot = None
    tmp = None

    def __init__(self):
        super().__init__()
        self.errors = []
        error_relay().raised.connect(self.errors.append)
        self.window.stop_jobs()
        self.window.runner.wait(10000)
        self._settle()

    def teardown(self):
        error_relay().raised.disconnect(self.errors.append)
        self.window.stop_jobs()
        self.window.runner.wait(10000)
        self.window.presentation.set_on(False)

    def _settle(self, ms=30):
        self.qtbot.wait(ms)

    # ----------------------------------------------------------------- rules
    @rule(name=st.sampled_from(SHORT_PRESETS))
    def switch_preset(self, name):
        self.window.load_preset(name, steps=STEPS)
        self._settle()

    @rule()
    def run(self):
        self.window.run(steps=STEPS)
        self._settle()

    @rule()
    def pause(self):
        self.window.toggle_pause()
        self._settle()

    @rule()
    def step(self):
        self.window.step()
        self._settle()

    @rule()
    def cancel(self):
        self.window.cancel()
        self._settle()

    @rule()
    def reset(self):
        self.window.reset()
        self._settle()

    @rule(index=st.integers(0, 1))
    def switch_tab(self, index):
        self.window.tabs.setCurrentIndex(index)
        self._settle()

    @rule()
    def save_and_load_session(self):
        if self.window.runner.busy:
            self.window.stop_jobs()
            self.window.runner.wait(10000)
            self._settle(100)
        path = str(self.tmp / "state.lens")
        self.window.save_session(path)
        assert "could not save" not in self.window.message_bar.text
        assert self.window.open_session(path) is None
        assert "cannot open" not in self.window.message_bar.text

    @rule()
    def toggle_theme(self):
        p = self.window.presentation
        p.set_theme("dark" if p.theme == "light" else "light", remember=False)
        self._settle()

    @rule()
    def toggle_presentation(self):
        p = self.window.presentation
        p.set_on(not p.on)
        self._settle()

    # ------------------------------------------------------------ invariants
    @invariant()
    def no_uncaught_exception(self):
        assert self.errors == []

    @invariant()
    def at_most_one_live_thread(self):
        runner = self.window.runner
        threads = {runner._thread, *runner._stale} - {None}
        assert sum(t.isRunning() for t in threads) <= 1

    @invariant()
    def controls_match_the_job_state(self):
        w, state = self.window, self.window.runner.state
        assert w.cancel_action.isEnabled() == (state != "idle")
        assert w.pause_action.isEnabled() == (state == "running")
        assert w.run_action.isEnabled() == (state != "running")
        assert w.run_action.text() == ("Resume" if state == "paused" else "Run")


@pytest.mark.qt_no_exception_capture  # the relay is the check: it sees every uncaught exception
def test_random_sequences_of_user_actions(window, qtbot, tmp_path):
    WindowMachine.window, WindowMachine.qtbot, WindowMachine.tmp = window, qtbot, tmp_path
    machine = settings(max_examples=5, stateful_step_count=12, deadline=None, suppress_health_check=list(HealthCheck))(
        WindowMachine
    )
    machine.TestCase().runTest()
