from pathlib import Path

__path__.append(str(Path(__file__).resolve().parents[2] / "hermes_0_19_0" / "cron"))
