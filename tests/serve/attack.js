// Runs inside a served archive (a tree page, an SVG, a gwtar page, a ZIM entry) and tries every way
// it can think of to read another mount, the index of mounts, or a server page: relative paths,
// absolute URLs on the bare host, other host names, another port; fetch, XHR, iframe +
// contentDocument, img + canvas readback, window.open + opener, service worker registration.
// What it managed to read is reported in the DOM (data-report on the root element) for the test.
(async () => {
  const SECRETS = ["VICTIM-SECRET-" + "7c2e", "Served " + "here"]; // split: this text itself is no leak
  const P = location.port;
  const other = new URLSearchParams(location.search).get("other") || P;
  const hosts = [`127.0.0.1:${P}`, `localhost:${P}`, `victim.localhost:${P}`,
    `vgwtar-gwtar-html.localhost:${P}`, `127.0.0.1:${other}`, `victim.localhost:${other}`];
  const paths = ["/victim/secret.txt", "/vgwtar.gwtar.html/~/secret.txt", "/vgwtar.gwtar.html", "/",
    "/victim/"];
  const targets = ["../victim/secret.txt", "../../victim/secret.txt", "/victim/secret.txt", "/",
    "/vgwtar.gwtar.html", "/vgwtar.gwtar.html/~/secret.txt"];
  for (const h of hosts) for (const p of paths) targets.push(`http://${h}${p}`);
  const report = { leaks: [], own: null, tried: 0 };
  const leaked = (how, url, text) => {
    if (typeof text === "string" && SECRETS.some((s) => text.includes(s))) report.leaks.push(`${how} ${url}`);
  };
  const timeout = (ms) => new Promise((r) => setTimeout(r, ms));
  // Its own page first: queued behind the attack's few hundred requests (six connections a host),
  // it missed the deadline below on a loaded machine and the report said the page read nothing.
  await Promise.race([
    fetch(location.href).then((r) => r.text()).then((t) => { report.own = t.length; }, () => {}),
    timeout(12000),
  ]);
  const jobs = [];
  for (const url of targets) {
    report.tried += 1;
    jobs.push(fetch(url).then((r) => r.text()).then((t) => leaked("fetch", url, t), () => {}));
    jobs.push(fetch(url, { mode: "no-cors", credentials: "include" }).then((r) => r.text())
      .then((t) => leaked("fetch-no-cors", url, t), () => {}));
    jobs.push(new Promise((done) => {
      try {
        const x = new XMLHttpRequest();
        x.open("GET", url);
        x.onload = () => { leaked("xhr", url, x.responseText); done(); };
        x.onerror = done;
        x.send();
      } catch (e) { done(); }
      setTimeout(done, 3000);
    }));
    jobs.push(new Promise((done) => {
      try {
        const f = document.createElementNS("http://www.w3.org/1999/xhtml", "iframe");
        f.src = url;
        f.onload = () => {
          try { leaked("iframe", url, f.contentDocument.documentElement.outerHTML); } catch (e) {}
          try { leaked("iframe-window", url, f.contentWindow.document.body.innerText); } catch (e) {}
          done();
        };
        (document.body || document.documentElement).appendChild(f);
      } catch (e) { done(); }
      setTimeout(done, 3000);
    }));
  }
  for (const h of hosts) {
    const url = `http://${h}/victim/secret.png`;
    jobs.push(new Promise((done) => {
      const img = new Image();
      img.onload = () => {
        try {
          const c = document.createElementNS("http://www.w3.org/1999/xhtml", "canvas");
          c.width = img.width; c.height = img.height;
          const g = c.getContext("2d");
          g.drawImage(img, 0, 0);
          const d = g.getImageData(0, 0, 1, 1).data;
          if (d[0] === 201 && d[1] === 13 && d[2] === 77) report.leaks.push(`canvas ${url}`);
        } catch (e) {}
        done();
      };
      img.onerror = done;
      img.src = url;
      setTimeout(done, 3000);
    }));
  }
  for (const url of [`http://victim.localhost:${P}/victim/secret.txt`, `http://127.0.0.1:${P}/`]) {
    jobs.push((async () => {
      try {
        const w = window.open(url, "_blank");
        await timeout(1500);
        try { leaked("window.open", url, w.document.documentElement.outerHTML); } catch (e) {}
        try { w && w.close(); } catch (e) {}
      } catch (e) {}
    })());
  }
  jobs.push((async () => {
    for (const url of ["sw.js", `http://victim.localhost:${P}/victim/sw.js`]) {
      try {
        await navigator.serviceWorker.register(url);
        report.leaks.push(`service-worker ${url}`);
      } catch (e) {}
    }
  })());
  await Promise.race([Promise.all(jobs), timeout(12000)]);
  document.documentElement.setAttribute("data-report", JSON.stringify(report));
})();
