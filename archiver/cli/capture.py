"""``archiver capture`` (a crawl, or an import of WARC and WACZ files) and ``archiver merge`` (the
shard folders of one crawl into one tree), with the capture flags as :func:`archiver.capture.capture`
keyword arguments (:func:`capture_options`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from archiver.errors import EXIT_PARTIAL, UsageError


def _cmd_capture(args: argparse.Namespace) -> int:
    from archiver.capture import capture_main, status_main

    if args.status:
        if args.state is None:
            raise UsageError(
                "--status needs --state redis://HOST:PORT/DB and --crawl NAME", subject="capture"
            )
        return status_main(args.state, args.crawl, as_json=args.json)
    if args.out is None:
        raise UsageError("the following argument is required: -o/--out", subject="capture")
    if args.new_version:
        return _new_version(args)
    if args.from_warc:
        from archiver.warc.importer import import_main

        # ``--from-warc A.warc URL`` reads as files and a seed: a URL never names a WARC file
        files = [p for p in args.from_warc if "://" not in p]
        seeds = [p for p in args.from_warc if "://" in p] + list(args.urls)
        return import_main(
            [Path(p) for p in files],
            seeds,
            Path(args.out),
            as_json=args.json,
            seeds_file=Path(args.seeds) if args.seeds else None,
            bookmarks=Path(args.bookmarks) if args.bookmarks else None,
            **capture_options(args),
        )
    return capture_main(
        args.urls,
        Path(args.out),
        as_json=args.json,
        seeds_file=Path(args.seeds) if args.seeds else None,
        bookmarks=Path(args.bookmarks) if args.bookmarks else None,
        **capture_options(args),
    )


def _new_version(args: argparse.Namespace) -> int:
    """``capture --new-version`` (formats/history.md §6): the tree's state recorded, everything fetched
    again, what the run did not reach taken out, the new state recorded as a version."""
    import sys

    from archiver.capture import capture_main
    from archiver.versions import recapture

    given_flags = (("--state", args.state), ("--refresh", args.refresh), ("--no-resume", args.no_resume),
                   ("--from-warc", args.from_warc))  # fmt: skip
    for flag, given in given_flags:
        if given:
            raise UsageError(f"--new-version and {flag} do not go together", subject="capture")
    out = Path(args.out)
    pending = recapture.begin(out)
    options = capture_options(args)
    wants_index = options["search_index"] is True or (options["search_index"] is None and not args.no_render)
    final = recapture.FinalManifest(out, pending)
    options.update(refresh=True, refresh_mark=pending.mark, search_index=False, revalidate=True,
                   final_manifest=final)  # fmt: skip
    code = capture_main(
        args.urls,
        out,
        as_json=args.json,
        seeds_file=Path(args.seeds) if args.seeds else None,
        bookmarks=Path(args.bookmarks) if args.bookmarks else None,
        **options,
    )
    done = recapture.finish(out, pending, final)
    if done.recorded is None and code not in (0, EXIT_PARTIAL):
        return code  # it failed, and said why (the pending mark stays: run again, it refreshes once)
    if done.recorded is None:
        print(f"archiver: {out}: the new version is not recorded yet: the run did not finish; run the same "
              "command again to go on", file=sys.stderr)  # fmt: skip
        return code or 3
    if wants_index:
        from archiver.search import store as search_store

        search_store.write_index(out)
    v = done.recorded.version
    print(
        f"{out}: version {v.id} recorded ({done.recorded.files} files, {done.removed} no longer on the "
        "site removed from the folder; archiver diff shows what changed)",
        file=sys.stderr,
    )
    return code


def capture_options(args: argparse.Namespace) -> dict[str, object]:
    """The keyword arguments of :func:`archiver.capture.capture` that ``archiver capture``'s flags set."""
    return {
        "render": not args.no_render,
        "depth": args.depth,
        "max_pages": args.max_pages,
        "subdomains": args.subdomains,
        "scope_prefix": args.scope,
        "include": args.include,
        "exclude": args.exclude,
        "allow_domains": args.allow_domain,
        "prefer": [w for group in args.prefer for w in group],
        "avoid": [w for group in args.avoid for w in group],
        "assets_any_host": args.assets_any_host,
        "skip_extensions": args.skip_ext,
        "chromium": args.chromium,
        "delay": args.delay,
        "timeout": args.timeout,
        "asset_cap": args.asset_cap,
        "resume": not args.no_resume,
        "refresh": args.refresh,
        "rerender": args.rerender,
        "ignore_robots": args.ignore_robots,
        "allow_private": args.allow_private,
        "allow_hosts": args.allow_host,
        "concurrency": args.concurrency,
        "tabs": args.tabs,
        "retries": args.retries,
        "settle": args.settle,
        "warc": args.warc,
        "warc_max_size": args.warc_max_size,
        "state": args.state,
        "crawl": args.crawl,
        "lease": args.lease,
        "progress_every": args.progress_every,
        "search_index": True if args.search_index else False if args.no_search_index else None,
    }


def _cmd_merge(args: argparse.Namespace) -> int:
    from archiver.cli.output import _print_json, _writing  # not at import: a capture prints no escaped name
    from archiver.merge import merge

    out = Path(args.out)
    result = _writing(lambda: merge([Path(p) for p in args.shards], out), out)
    doc = {
        "path": str(result.path),
        "shards": result.shards,
        "pages": result.pages,
        "assets": result.assets,
        "files": result.files,
        "duplicates": result.duplicates,
        "relinked": result.relinked,
        "complete": result.complete,
    }
    if args.json:
        _print_json(doc)
    else:
        dup = f", {result.duplicates} stored twice (the last fetch kept)" if result.duplicates else ""
        print(
            f"{result.path}: merged {result.shards} shards: {result.pages} pages, {result.assets} assets"
            f" ({result.files} files{dup}); {result.relinked} documents relinked"
            + ("" if result.complete else "; INCOMPLETE: some shard has work pending")
        )
    return 0
