"""Run setup: what turns a front end's options into a run, without pytest.

A front end (the pytest plugin, `torchcts run` through it, fuzz, probe, selftest, the CLI's device
checks) describes what it wants as a `request.RunRequest` and calls `start.start_run`, or the one
concept it needs: `device` (device and compile-target checks), `checks` (every typed option checked
before anything loads), `manifest_load` (the run's manifest, backend and suites), `seeds` (the run's
seed and draw settings), `isolation` (what runs isolated), `settings.engine_settings` (the one place
`EngineSettings` is built). Errors are `errors.SessionError` (a one-line message, exit 2).
"""
