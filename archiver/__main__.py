from archiver.start import run

raise SystemExit(run())
