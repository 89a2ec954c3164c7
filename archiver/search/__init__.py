"""Full-text search inside archives (formats/search.md): ``text`` (what a reader sees on a page),
``tokens`` (the tokenizer), ``build`` (the index builder), ``query`` (parsing, loading shards,
ranking), ``snippet`` (marked excerpts): all pure; ``store`` (an index in a tree on disk: write,
read, verify) and ``page`` (the search page written beside it) do the IO."""
