"""WARC and WACZ: a streaming WARC reader with digest checks (:mod:`.read`), CDXJ and SURT
(:mod:`.cdxj`), the WACZ writer (:mod:`.wacz`), ``verify``/``ls`` of both (:mod:`.verify`), the
recorder of ``capture --warc`` (:mod:`.record`) and the import through a replay transport
(:mod:`.replay`, :mod:`.importer`). The spec is formats/warc.md.

The package imports none of them: a recording capture loads the recorder and the reader only, not
the WACZ writer, ``zipfile`` and the verifier (import from the submodules).
"""
