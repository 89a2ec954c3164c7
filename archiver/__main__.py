from archiver.cli import entry

raise SystemExit(entry())
