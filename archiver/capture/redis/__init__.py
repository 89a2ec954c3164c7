"""The crawl state many workers share in Redis (``capture --state redis://… --crawl NAME``;
formats/crawl-state.md §6), beside the single-process SQLite state (:mod:`archiver.capture.state`):

- :mod:`.state`: :class:`~.state.RedisState`, the :class:`archiver.capture.crawlstate.CrawlState` of
  one worker, and :func:`~.state.redis_state`, its factory;
- :mod:`.link`: the worker's connection (client, key prefix, retries while Redis is away, the
  backlog of writes), which the modules below take instead of the state;
- :mod:`.lua`: the scripts that change the frontier atomically;
- :mod:`.conn`: the ``redis://`` URL, the server and key checks, and their one-line errors;
- :mod:`.config`: the crawl's registration (every worker gives the same seeds and scope options);
- :mod:`.politeness`: each host's clock and robots.txt, crawl-wide;
- :mod:`.shard`: a worker's shard seen alone, settled when the crawl is complete;
- :mod:`.budget`: the worker's side of the crawl-wide page budget;
- :mod:`.status`: ``--status``.

Nothing here is imported by a capture without ``--state``."""
