"""serve's Memento answers (formats/history.md §7) read by another project's Memento client: the
Memento project's own Python client (PyPI ``memento_client``) checks that the TimeGate is a TimeGate
and a version's page a memento by RFC 7089's rules, asks the TimeGate by original URL (URI-R) with an
Accept-Datetime and gets the memento in force with its first/last/prev/next, and parses the TimeMap.

The client asks for ``*.localhost`` names (each version's origin): RFC 6761 §6.3 says they are the
loopback address, which this machine's resolver does not answer, so the test resolves them so for
the client (no request goes anywhere but 127.0.0.1)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import pytest
from memento_client import MementoClient  # a dev dependency: tools/bootstrap installs it

from archiver.serve import running
from archiver.versions import store
from tests.versions.helpers import HOME, page, write_tree

V1, V2, V3 = "20261130T090000Z", "20261201T090000Z", "20261202T090000Z"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("memento-client") / "site"
    for n, (when, word) in enumerate(
        [("2026-11-30T09:00:00Z", "one"), ("2026-12-01T09:00:00Z", "two"), ("2026-12-02T09:00:00Z", "three")]
    ):
        files = {"index.html": page("Home", f"<p>{word}</p>"), "docs/a.html": page("A", f"<p>{word}</p>")}
        if n == 1:
            files["docs/b.html"] = page("B", "<p>only in the second</p>")
        write_tree(root, files, when)
        store.record(root)
    with running([root]) as url:
        yield url


@pytest.fixture(autouse=True)
def _localhost_is_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name == "localhost" or name.endswith(".localhost"):
            host = "127.0.0.1"
        else:
            raise AssertionError(f"the test asked for {name}: only loopback is allowed")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


def _memento(base: str, version: str, path: str) -> str:
    port = urlsplit(base).port
    return f"http://site-{version.lower()}.localhost:{port}/site@{version}/{path}"


def test_the_client_calls_the_timegate_a_timegate_and_a_page_a_memento(served: str) -> None:
    port = urlsplit(served).port
    gate = f"http://localhost:{port}/~/timegate/site/docs/a.html"
    assert MementoClient.is_timegate(gate, accept_datetime="Tue, 01 Dec 2026 10:00:00 GMT")
    assert MementoClient.is_memento(_memento(served, V2, "docs/a.html"))
    assert not MementoClient.is_memento(gate)


@pytest.mark.parametrize(
    ("when", "closest", "neighbours"),
    [
        (datetime(2026, 12, 1, 12), V2, {"first": V1, "prev": V1, "next": V3, "last": V3}),
        (datetime(2026, 11, 1), V1, {"first": V1, "next": V2, "last": V3}),
        (datetime(2027, 1, 1), V3, {"first": V1, "prev": V2, "last": V3}),
    ],
)
def test_the_client_finds_the_memento_in_force_by_original_url(
    served: str, when: datetime, closest: str, neighbours: dict[str, str]
) -> None:
    port = urlsplit(served).port
    client = MementoClient(
        timegate_uri=f"http://localhost:{port}/~/timegate/site/", check_native_timegate=False
    )
    # asked from a memento of another version: the client finds the URI-R in its Link header
    info = client.get_memento_info(_memento(served, V1, "docs/a.html"), accept_datetime=when)
    assert info["original_uri"] == HOME + "docs/a.html"
    found = info["mementos"]
    assert found["closest"]["uri"] == [_memento(served, closest, "docs/a.html")]
    assert found["closest"]["http_status_code"] == 200
    assert found["closest"]["datetime"] == datetime.strptime(closest, "%Y%m%dT%H%M%SZ")
    got = {
        rel: doc["uri"][0].rsplit("@", 1)[1].split("/")[0] for rel, doc in found.items() if rel != "closest"
    }
    assert got == neighbours


def test_a_url_only_one_version_holds_and_one_none_holds(served: str) -> None:
    port = urlsplit(served).port
    client = MementoClient(
        timegate_uri=f"http://localhost:{port}/~/timegate/site/", check_native_timegate=False
    )
    info = client.get_memento_info(_memento(served, V2, "docs/b.html"), accept_datetime=datetime(2027, 1, 1))
    assert info["mementos"]["closest"]["uri"] == [_memento(served, V2, "docs/b.html")]
    assert set(info["mementos"]) == {"closest", "first", "last"}
    gone = MementoClient.request_head(f"http://localhost:{port}/~/timegate/site/{HOME}nothing.html")
    assert gone.status_code == 404


def test_the_timemap_parses_with_the_client(served: str) -> None:
    import requests

    port = urlsplit(served).port
    for target in ("docs/a.html", HOME + "docs/a.html"):  # by tree path and by URI-R
        got = requests.get(f"http://localhost:{port}/~/timemap/site/{target}", timeout=30)
        assert got.status_code == 200
        assert got.headers["content-type"].startswith("application/link-format")
        links = MementoClient.parse_link_header(got.text)
        rels = MementoClient.get_uri_dt_for_rel(links, ["original", "timegate", "self", "first", "last"])
        assert rels["original"]["uri"] == HOME + "docs/a.html"
        assert rels["first"]["uri"] == _memento(served, V1, "docs/a.html")
        assert rels["last"]["uri"] == _memento(served, V3, "docs/a.html")
        dated = [u for u, p in links.items() if "memento" in p["rel"]]
        assert len(dated) == 3 and all(links[u]["datetime"] for u in dated)
