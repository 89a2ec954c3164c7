"""A tree's history (formats/history.md): versions recorded in ``_archiver/.versions/`` (:mod:`store`),
the dates that name them (:mod:`dates`), and what changed and died between two of them (:mod:`diff`,
:mod:`volatile`)."""
