"""pytest plugin for scripts/pytorch_tests.py: prints each failure's first error
line, and each skip's reason, as soon as the test ends, so a run killed later
(a crash, a hang, the file's time budget) still leaves why the tests before it
failed or did not run."""
_config = None


def pytest_configure(config):
    global _config
    _config = config


def pytest_runtest_logreport(report):
    terminal = _config.pluginmanager.get_plugin("terminalreporter") if _config else None
    if terminal is None:
        return
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = (crash.message if crash is not None else str(report.longrepr)).strip()
        terminal.write_line(f"\nERROR-LINE {report.nodeid} - {message.splitlines()[0] if message else report.outcome}")
    elif report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).strip().splitlines()
        terminal.write_line(f"\nSKIP-LINE {report.nodeid} - {reason[0] if reason else 'skipped'}")
