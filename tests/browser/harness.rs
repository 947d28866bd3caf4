//! One journey = one demo (`service serve --demo`, its own SQLite file and simulator), one
//! chromedriver and one headless Chromium session with a fresh profile. Screenshots go to
//! `$BROWSER_SCREENSHOTS` (default `target/tmp/browser-screenshots/`), one desktop and one phone
//! picture per step; a failed journey also leaves `<journey>-failure.png` and `.html` there.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator, elements::Element, key::Key};
use futures_util::FutureExt;
use serde_json::{Value, json};

use crate::demo_process::{Demo, start_demo};

/// How long any one wait (an element, a text, a page) may take before the journey fails.
const WAIT: Duration = Duration::from_secs(20);
pub const DESKTOP: (u32, u32) = (1280, 900);
pub const PHONE: (u32, u32) = (360, 780);

/// Where the browser and its driver are; Debian's packages put them here.
fn executable(env: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(env).map_or_else(|| PathBuf::from(default), PathBuf::from);
    assert!(
        path.exists(),
        "the browser tests need Chromium and its WebDriver: {} was not found. On Debian: \
         `apt-get install chromium chromium-driver` (`.ci/run` installs them when missing), or set \
         {env} to another path.",
        path.display()
    );
    path
}

/// A chromedriver on a free local port, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    async fn start() -> Self {
        let program = executable("CHROMEDRIVER", "/usr/bin/chromedriver");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(program)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let driver = Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let http = reqwest::Client::new();
        let started = Instant::now();
        loop {
            if let Ok(response) = http.get(format!("{}/status", driver.url)).send().await
                && let Ok(body) = response.json::<Value>().await
                && body["value"]["ready"] == json!(true)
            {
                return driver;
            }
            assert!(started.elapsed() < WAIT, "chromedriver did not get ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Whether the page's scripts run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Js {
    On,
    Off,
}

/// A signed-out browser in front of a fresh demo.
pub struct Browser {
    pub client: Client,
    pub demo: Demo,
    pub base: String,
    pub sim: String,
    pub api_key: String,
    journey: String,
    shots: PathBuf,
    step: std::sync::atomic::AtomicU32,
    _profile: tempfile::TempDir,
    _driver: Driver,
}

pub fn screenshot_dir() -> PathBuf {
    std::env::var_os("BROWSER_SCREENSHOTS").map_or_else(
        || Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-screenshots"),
        PathBuf::from,
    )
}

/// Runs one journey, then checks that the simulator recorded no protocol violation. Whatever
/// happens inside, the browser is closed and the demo stopped; a failure first saves a
/// screenshot and the page's HTML beside the journey's other pictures.
pub async fn journey<F>(name: &str, js: Js, body: F)
where
    F: for<'a> AsyncFnOnce(&'a Browser),
{
    let browser = Browser::open(name, js).await;
    // Every journey ends by asserting that the simulator saw nothing the platforms refuse.
    let outcome = std::panic::AssertUnwindSafe(async {
        body(&browser).await;
        browser.assert_no_violations().await;
    })
    .catch_unwind()
    .await;
    if outcome.is_err() {
        browser.save_failure().await;
        eprintln!(
            "journey {name} failed; screenshots in {}; the demo's log:\n{}",
            browser.shots.display(),
            browser.demo.log()
        );
    }
    let Browser { client, .. } = browser;
    let _ = client.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

impl Browser {
    async fn open(journey: &str, js: Js) -> Self {
        // Two rustls providers are linked (see Cargo.toml); the first test to get here picks one.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let chromium = executable("CHROMIUM", "/usr/bin/chromium");
        let driver = Driver::start().await;
        let demo = start_demo().await;
        let profile = tempfile::tempdir().unwrap();
        let mut prefs = json!({"intl.accept_languages": "en-US,en"});
        if js == Js::Off {
            prefs["profile.managed_default_content_settings.javascript"] = json!(2);
        }
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                // Headless, as root in CI, and quiet on a closed network: without the last
                // flags Chromium keeps opening connections that the network refuses.
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--disable-background-networking", "--disable-sync",
                    "--disable-component-update", "--disable-quic", "--lang=en-US",
                    "--hide-scrollbars", "--force-device-scale-factor=1",
                    // A screen tall enough for whole-page pictures (a window cannot be taller).
                    "--screen-info={0,0 1600x3000}",
                    format!("--window-size={},{}", DESKTOP.0, DESKTOP.1),
                    format!("--user-data-dir={}", profile.path().display()),
                ],
                "prefs": prefs,
            }),
        );
        let client = ClientBuilder::rustls()
            .expect("TLS roots")
            .capabilities(caps)
            .connect(&driver.url)
            .await
            .expect("a Chromium session through chromedriver");
        let shots = screenshot_dir();
        std::fs::create_dir_all(&shots).unwrap();
        // This journey's pictures from an earlier run would mislead (a stale failure above all).
        let prefix = format!("{journey}-");
        for entry in std::fs::read_dir(&shots).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Browser {
            base: demo.summary["base_url"].as_str().unwrap().to_string(),
            sim: demo.summary["simulator_url"].as_str().unwrap().to_string(),
            api_key: demo.summary["api_key"].as_str().unwrap().to_string(),
            client,
            demo,
            journey: journey.to_string(),
            shots,
            step: Default::default(),
            _profile: profile,
            _driver: driver,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The demo's account on `platform`, as `demo.json` lists it.
    pub fn demo_account(&self, platform: &str) -> &Value {
        self.demo.summary["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["platform"] == platform)
            .unwrap_or_else(|| panic!("the demo has a {platform} account"))
    }

    pub async fn goto(&self, path: &str) {
        self.client.goto(&self.url(path)).await.unwrap();
    }

    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        }
    }

    /// Waits until the browser is on `path` (query ignored) of the service.
    pub async fn wait_path(&self, path: &str) {
        self.wait_until(&format!("the page {path}"), async || {
            let url = self.client.current_url().await.ok()?;
            (url.as_str().starts_with(&self.base) && url.path() == path).then_some(())
        })
        .await;
    }

    /// Polls `probe` until it answers `Some`, failing the journey after [`WAIT`].
    pub async fn wait_until<T>(&self, what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
        let started = Instant::now();
        loop {
            if let Some(found) = probe().await {
                return found;
            }
            if started.elapsed() > WAIT {
                let url = self.client.current_url().await.map(|u| u.to_string());
                panic!("waited {WAIT:?} for {what}; the browser is on {url:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn find(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
    }

    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        self.client.find_all(Locator::Css(css)).await.unwrap()
    }

    pub async fn exists(&self, css: &str) -> bool {
        !self.find_all(css).await.is_empty()
    }

    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.unwrap()
    }

    /// Waits until some element matching `css` shows `needle`; returns that element's text.
    pub async fn wait_text(&self, css: &str, needle: &str) -> String {
        self.wait_until(&format!("{css} to show {needle:?}"), async || {
            for element in self.find_all(css).await {
                if let Ok(text) = element.text().await
                    && text.contains(needle)
                {
                    return Some(text);
                }
            }
            None
        })
        .await
    }

    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap();
    }

    /// Clears a field and types into it, as a person would.
    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Picks the option with this value, or else with this label (an option without a
    /// `value` attribute has its text as value).
    pub async fn select(&self, css: &str, value: &str) {
        let select = self.find(css).await;
        if select.select_by_value(value).await.is_err() {
            select
                .select_by_label(value)
                .await
                .unwrap_or_else(|e| panic!("{css} has no option {value}: {e}"));
        }
    }

    /// Presses Tab until the focused element matches `css`, checking on the way that every
    /// element the keyboard lands on shows a focus indicator. Fails after `max` presses.
    pub async fn tab_to(&self, css: &str, max: usize) -> Element {
        for _ in 0..max {
            self.client
                .active_element()
                .await
                .unwrap()
                .send_keys(&Key::Tab.to_string())
                .await
                .unwrap();
            let focused = self.client.active_element().await.unwrap();
            self.assert_focus_visible(&focused).await;
            let matches = self
                .client
                .execute(
                    "return arguments[0].matches(arguments[1]);",
                    vec![serde_json::to_value(&focused).unwrap(), json!(css)],
                )
                .await
                .unwrap();
            if matches == json!(true) {
                return focused;
            }
        }
        panic!("{css} was not reached within {max} presses of Tab");
    }

    async fn assert_focus_visible(&self, element: &Element) {
        let style = self
            .client
            .execute(
                "const s = getComputedStyle(arguments[0]);
                 return {outline: s.outlineStyle + ' ' + s.outlineWidth, shadow: s.boxShadow,
                         tag: arguments[0].outerHTML.slice(0, 120)};",
                vec![serde_json::to_value(element).unwrap()],
            )
            .await
            .unwrap();
        let outline = style["outline"].as_str().unwrap_or_default();
        let visible = !(outline.starts_with("none") || outline.ends_with(" 0px"))
            || style["shadow"].as_str().is_some_and(|s| s != "none");
        assert!(visible, "no visible focus on {}", style["tag"]);
    }

    pub async fn press_enter(&self) {
        self.client
            .active_element()
            .await
            .unwrap()
            .send_keys(&Key::Enter.to_string())
            .await
            .unwrap();
    }

    /// Saves the page at desktop and phone width as `<journey>-<n>-<step>-{desktop,phone}.png`,
    /// and checks on the way what every page owes a person: nothing wider than a 360 px phone,
    /// a label on every field, readable contrast. Ends at desktop size again.
    pub async fn shot(&self, step: &str) {
        let n = self.step.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        for (label, (width, height)) in [("desktop", DESKTOP), ("phone", PHONE)] {
            self.client.set_window_size(width, height).await.unwrap();
            // Tall enough for the whole page, so the picture shows all of it (the window's
            // height includes the browser's own bars: add their height).
            let sizes = self
                .client
                .execute(
                    "return [document.documentElement.scrollHeight,
                             window.outerHeight - window.innerHeight];",
                    vec![],
                )
                .await
                .unwrap();
            let page = sizes[0].as_u64().unwrap_or(0) as u32;
            let bars = sizes[1].as_u64().unwrap_or(0) as u32;
            let full = page.clamp(height, 2800) + bars;
            self.client.set_window_size(width, full).await.unwrap();
            if label == "phone" {
                self.assert_fits_phone().await;
            }
            self.check_page().await;
            let png = self.client.screenshot().await.unwrap();
            let file = self
                .shots
                .join(format!("{}-{n}-{step}-{label}.png", self.journey));
            std::fs::write(&file, png).unwrap();
        }
        self.client
            .set_window_size(DESKTOP.0, DESKTOP.1)
            .await
            .unwrap();
    }

    async fn assert_fits_phone(&self) {
        let widths = self
            .client
            .execute(
                // The page's width, the viewport's, and the outermost elements that stick out
                // (past the right edge, and not inside a scrolling box), to name the culprit.
                "const w = window.innerWidth;
                 const wide = (e) => Math.max(e.getBoundingClientRect().right,
                   getComputedStyle(e).overflowX === 'visible'
                     ? e.getBoundingClientRect().left + e.scrollWidth : 0) > w + 0.5;
                 const out = [document.body, ...document.body.querySelectorAll('*')].filter((e) => {
                   if (!wide(e)) return false;
                   const p = e.parentElement;
                   if (p !== document.documentElement && wide(p)) return false;
                   for (let a = p; a && a !== document.documentElement; a = a.parentElement) {
                     const st = getComputedStyle(a);
                     if (st.overflowX !== 'visible' && (st.position !== 'static' || getComputedStyle(e).position !== 'absolute')) return false;
                   }
                   return true;
                 }).map((e) => e.outerHTML.slice(0, 100));
                 return [document.documentElement.scrollWidth, w, out];",
                vec![],
            )
            .await
            .unwrap();
        let (page, viewport) = (widths[0].as_u64().unwrap(), widths[1].as_u64().unwrap());
        assert!(
            page <= viewport,
            "{}: the page is {page} px wide in a {viewport} px phone viewport; too wide: {}",
            self.path().await,
            widths[2]
        );
    }

    /// Labels and contrast, computed by the browser from the rendered page.
    async fn check_page(&self) {
        let problems = self
            .client
            .execute(A11Y_CHECK, vec![])
            .await
            .unwrap_or_else(|e| panic!("the page check could not run: {e}"));
        let problems = problems.as_array().cloned().unwrap_or_default();
        assert!(
            problems.is_empty(),
            "{}: {}",
            self.path().await,
            serde_json::to_string_pretty(&problems).unwrap()
        );
    }

    /// The page check of [`Self::shot`] fails on grey-on-white text and on a field without a
    /// label: both are added to the page, checked, then removed.
    pub async fn assert_check_catches_faint_text(&self) {
        self.client
            .execute(
                "const p = document.createElement('p'); p.id = 'faint'; p.textContent = 'faint';
                 p.style.color = '#bbbbbb'; p.style.background = '#ffffff';
                 const i = document.createElement('input'); i.id = 'nameless';
                 document.querySelector('main').append(p, i);",
                vec![],
            )
            .await
            .unwrap();
        let problems = self.client.execute(A11Y_CHECK, vec![]).await.unwrap();
        let text = problems.to_string();
        assert!(
            text.contains("\"contrast\"") && text.contains("faint"),
            "{text}"
        );
        assert!(
            text.contains("unlabelled") && text.contains("nameless"),
            "{text}"
        );
        self.client
            .execute(
                "document.getElementById('faint').remove(); document.getElementById('nameless').remove();",
                vec![],
            )
            .await
            .unwrap();
    }

    async fn save_failure(&self) {
        if let Ok(png) = self.client.screenshot().await {
            let _ = std::fs::write(
                self.shots.join(format!("{}-failure.png", self.journey)),
                png,
            );
        }
        if let Ok(html) = self.client.source().await {
            let _ = std::fs::write(
                self.shots.join(format!("{}-failure.html", self.journey)),
                html,
            );
        }
    }

    /// Signs in through the identity provider's own page, typing the address as a person does.
    pub async fn sign_in(&self, email: &str) {
        self.goto("/signin").await;
        self.click("main a.button").await;
        self.fill("input[name=login_hint]", email).await;
        self.click("button[type=submit]").await;
        self.wait_path("/dashboard").await;
    }

    /// The JSON API, as an API client calls it with the demo's key.
    pub async fn api(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = reqwest::Client::new()
            .request(method, self.url(path))
            .header("service-api-key", &self.api_key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }

    /// Injects a fault for one of the demo's accounts in the simulator.
    pub async fn fault(&self, platform: &str, fault: Value) {
        let external = self.demo_account(platform)["external_id"]
            .as_str()
            .unwrap()
            .to_string();
        let response = reqwest::Client::new()
            .put(format!("{}/_sim/faults/{platform}/{external}", self.sim))
            .json(&fault)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "fault not accepted");
    }

    /// The simulator saw nothing the real platforms would refuse.
    async fn assert_no_violations(&self) {
        let body: Value = reqwest::get(format!("{}/_sim/violations", self.sim))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(body["count"], json!(0), "protocol violations: {body}");
    }
}

/// Run in the page: every visible form field has a label, and every piece of visible text
/// reaches WCAG AA contrast against the background it is drawn on (4.5:1, or 3:1 for large
/// text). Backgrounds are found by walking up to the first opaque `background-color`.
const A11Y_CHECK: &str = r#"
const problems = [];
const rgba = (c) => { const m = c.match(/[\d.]+/g); return m ? m.map(Number).concat([1]).slice(0, 4) : [0,0,0,0]; };
const lum = ([r,g,b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126*f(r) + 0.7152*f(g) + 0.0722*f(b); };
const background = (el) => {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  let out = [255,255,255];
  for (const c of layers.reverse()) out = out.map((v, i) => c[i] * c[3] + v * (1 - c[3]));
  return out;
};
const shown = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el); return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
  if (!shown(el)) continue;
  const named = el.labels.length > 0 || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
  if (!named) problems.push({unlabelled: el.outerHTML.slice(0, 120)});
}
if (!document.documentElement.lang) problems.push({missing: 'html lang'});
if (document.querySelectorAll('h1').length !== 1) problems.push({h1_count: document.querySelectorAll('h1').length});
for (const el of document.body.querySelectorAll('*')) {
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '');
  if (!own || !shown(el) || el.closest('svg')) continue;
  const s = getComputedStyle(el);
  const fg = rgba(s.color);
  const bg = background(el);
  const mixed = fg.slice(0, 3).map((v, i) => v * fg[3] + bg[i] * (1 - fg[3]));
  const [a, b] = [lum(mixed), lum(bg)].sort((x, y) => y - x);
  const ratio = (a + 0.05) / (b + 0.05);
  const size = parseFloat(s.fontSize);
  const large = size >= 24 || (size >= 18.66 && Number(s.fontWeight) >= 700);
  if (ratio < (large ? 3 : 4.5)) problems.push({contrast: Math.round(ratio * 100) / 100, text: el.textContent.trim().slice(0, 60), tag: el.tagName, color: s.color});
}
return problems;
"#;
