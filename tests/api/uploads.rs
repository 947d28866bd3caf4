//! Uploaded media: `POST /v2/media` (a raw body or a multipart form, with an API key or the
//! dashboard session), the caller's library (`GET`, `DELETE /v2/media…`), and the public file
//! URL platforms fetch (exact type and length, ranges, `ETag`, headers that keep a browser from
//! running it). What is refused (bytes that are no accepted type or disagree with the declared
//! one, a file over the size limit, one past the user's quota) is a catalogue error that keeps
//! nothing.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::{StatusCode, header};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::helpers::{TestApp, status_and_json};

/// A valid PNG header of `width` × `height` followed by `padding` bytes.
fn png(width: u32, height: u32, padding: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes.extend((0..padding).map(|i| (i % 251) as u8));
    bytes
}

fn mp4(padding: usize) -> Vec<u8> {
    let mut bytes = b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom".to_vec();
    bytes.extend(std::iter::repeat_n(7u8, padding));
    bytes
}

/// `POST /v2/media` with the raw file as the body.
async fn upload(app: &TestApp, key: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
    let response = app
        .http
        .post(app.url("/v2/media"))
        .header("service-api-key", key)
        .header(header::CONTENT_TYPE, content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let (status, answer) = status_and_json(response).await;
    crate::openapi::assert_documented("post", "/v2/media", status, &answer);
    (status, answer)
}

async fn library(app: &TestApp, key: &str) -> Value {
    let response = app
        .http
        .get(app.url("/v2/media"))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    let (status, answer) = status_and_json(response).await;
    assert_eq!(status, 200, "{answer}");
    crate::openapi::assert_documented("get", "/v2/media", status, &answer);
    answer
}

/// The files in the media store.
async fn stored_files(app: &TestApp) -> usize {
    app.media_objects().list().await.unwrap().len()
}

#[actix_rt::test]
async fn an_uploaded_image_is_typed_by_its_bytes_and_served_at_its_url() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let file = png(1080, 1350, 5_000);
    // Declared as a generic type: the bytes decide.
    let (status, answer) = upload(
        &app,
        &publisher.key,
        "application/octet-stream",
        file.clone(),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let media = &answer["media"];
    assert_eq!(media["content_type"], "image/png");
    assert_eq!(media["size"], file.len());
    assert_eq!(media["sha256"], format!("{:x}", Sha256::digest(&file)));
    assert_eq!(
        (media["width"].as_u64(), media["height"].as_u64()),
        (Some(1080), Some(1350))
    );
    let url = media["url"].as_str().unwrap().to_string();
    assert!(url.starts_with(&app.base) && url.ends_with(".png"), "{url}");

    // Served without authentication, with its exact type and length and safe headers.
    let served = app.http.get(&url).send().await.unwrap();
    assert_eq!(served.status(), StatusCode::OK);
    let headers = served.headers().clone();
    assert_eq!(headers[header::CONTENT_TYPE], "image/png");
    assert_eq!(
        headers[header::CONTENT_LENGTH],
        file.len().to_string().as_str()
    );
    assert_eq!(headers[header::ACCEPT_RANGES], "bytes");
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert_eq!(headers[header::CONTENT_SECURITY_POLICY], "sandbox");
    let etag = headers[header::ETAG].to_str().unwrap().to_string();
    assert_eq!(served.bytes().await.unwrap(), Bytes::from(file.clone()));

    // A range, as video fetchers ask for.
    let part = app
        .http
        .get(&url)
        .header(header::RANGE, "bytes=100-199")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        part.headers()[header::CONTENT_RANGE],
        format!("bytes 100-199/{}", file.len()).as_str()
    );
    assert_eq!(
        part.bytes().await.unwrap(),
        Bytes::from(file[100..200].to_vec())
    );
    let tail = app
        .http
        .get(&url)
        .header(header::RANGE, "bytes=-10")
        .send()
        .await
        .unwrap();
    assert_eq!(tail.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        tail.bytes().await.unwrap(),
        Bytes::from(file[file.len() - 10..].to_vec())
    );
    let beyond = app
        .http
        .get(&url)
        .header(header::RANGE, format!("bytes={}-", file.len()))
        .send()
        .await
        .unwrap();
    assert_eq!(beyond.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        beyond.headers()[header::CONTENT_RANGE],
        format!("bytes */{}", file.len()).as_str()
    );
    let unchanged = app
        .http
        .get(&url)
        .header(header::IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(unchanged.status(), StatusCode::NOT_MODIFIED);
    let head = app.http.head(&url).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(
        head.headers()[header::CONTENT_LENGTH],
        file.len().to_string().as_str()
    );

    // Neither another token, another extension nor another id serves it.
    let id = media["id"].as_str().unwrap();
    let (_, file_part) = url.rsplit_once('/').unwrap();
    let token = file_part.trim_end_matches(".png");
    let other_token = format!(
        "{}{}",
        &token[..token.len() - 1],
        if token.ends_with('A') { 'B' } else { 'A' }
    );
    for wrong in [
        format!(
            "{}/media/{}/{other_token}.png",
            app.base,
            id.replace('-', "")
        ),
        format!("{}/media/{}/{token}.jpg", app.base, id.replace('-', "")),
        format!(
            "{}/media/{}/{token}.png",
            app.base,
            uuid::Uuid::new_v4().simple()
        ),
        format!("{}/media/not-an-id/x.png", app.base),
    ] {
        let response = app.http.get(&wrong).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{wrong}");
        let (_, body) = status_and_json(response).await;
        assert_eq!(body["error"], "NotFound");
    }
}

#[actix_rt::test]
async fn a_form_upload_from_the_dashboard_lands_in_the_users_library_and_delete_removes_it() {
    let app = TestApp::spawn().await;
    let owner = app.publisher("facebook", "pro").await;
    let file = mp4(20_000);
    let form = reqwest::multipart::Form::new()
        .text("note", "ignored")
        .part(
            "file",
            reqwest::multipart::Part::bytes(file.clone())
                .file_name("clip.mp4")
                .mime_str("video/mp4")
                .unwrap(),
        );
    let response = owner
        .dashboard
        .no_redirect
        .post(app.url("/v2/media"))
        .header(header::ORIGIN, &app.base)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let (status, answer) = status_and_json(response).await;
    assert_eq!(status, 201, "{answer}");
    let media = answer["media"].clone();
    assert_eq!(media["content_type"], "video/mp4");
    assert_eq!(media["width"], Value::Null);
    assert!(media["url"].as_str().unwrap().ends_with(".mp4"));
    let id = media["id"].as_str().unwrap().to_string();

    let listed = library(&app, &owner.key).await;
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["media"][0], media);

    // Another user sees it as an unknown id: the same 404.
    let stranger = app.publisher("facebook", "pro").await;
    let look = |key: String, id: String| {
        let app = &app;
        async move {
            let response = app
                .http
                .get(app.url(&format!("/v2/media/{id}")))
                .header("service-api-key", key)
                .send()
                .await
                .unwrap();
            status_and_json(response).await
        }
    };
    let (theirs, theirs_body) = look(stranger.key.clone(), id.clone()).await;
    let (unknown, unknown_body) =
        look(stranger.key.clone(), uuid::Uuid::new_v4().to_string()).await;
    assert_eq!((theirs, unknown), (404, 404));
    assert_eq!(theirs_body, unknown_body);
    let delete = |key: String| {
        let app = &app;
        let id = id.clone();
        async move {
            let response = app
                .http
                .delete(app.url(&format!("/v2/media/{id}")))
                .header("service-api-key", key)
                .send()
                .await
                .unwrap();
            status_and_json(response).await
        }
    };
    assert_eq!(delete(stranger.key.clone()).await.0, 404);
    let (mine, _) = look(owner.key.clone(), id.clone()).await;
    assert_eq!(mine, 200);

    assert_eq!(delete(owner.key.clone()).await.0, 200);
    assert_eq!(library(&app, &owner.key).await["total"], 0);
    let gone = app
        .http
        .get(media["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    assert_eq!(stored_files(&app).await, 0);
}

#[actix_rt::test]
async fn files_that_are_not_accepted_media_are_refused_and_nothing_is_kept() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let svg = b"<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'></svg>".to_vec();
    let html = b"<!DOCTYPE html><html><script>alert(1)</script></html>".to_vec();
    for (declared, body) in [
        ("image/svg+xml", svg),
        ("image/png", html),
        // PNG bytes declared as a JPEG.
        ("image/jpeg", png(10, 10, 100)),
        ("video/mp4", b"GIF89a\x01\0\x01\0\0\0\0".repeat(10)),
        ("image/png", Vec::new()),
    ] {
        let (status, answer) = upload(&app, &publisher.key, declared, body).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("InvalidMediaType")),
            "{declared}: {answer}"
        );
    }
    assert_eq!(library(&app, &publisher.key).await["total"], 0);
    assert_eq!(stored_files(&app).await, 0);
}

#[actix_rt::test]
async fn a_file_over_the_limit_is_refused_as_soon_as_it_crosses_it() {
    let app = TestApp::spawn_with(|config| config.media.max_bytes = 64 * 1024).await;
    let publisher = app.publisher("facebook", "pro").await;
    // A body that sends more than the limit and then never ends: the answer cannot wait for it.
    let head = png(100, 100, 100 * 1024);
    let body = futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from(head))])
        .chain(futures_util::stream::pending());
    let response = tokio::time::timeout(
        Duration::from_secs(20),
        app.http
            .post(app.url("/v2/media"))
            .header("service-api-key", &publisher.key)
            .header(header::CONTENT_TYPE, "image/png")
            .body(reqwest::Body::wrap_stream(body))
            .send(),
    )
    .await
    .expect("the refusal came before the body ended")
    .unwrap();
    let (status, answer) = status_and_json(response).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("MediaTooLarge")),
        "{answer}"
    );
    assert_eq!(library(&app, &publisher.key).await["total"], 0);
    assert_eq!(stored_files(&app).await, 0);
}

#[actix_rt::test]
async fn uploads_past_the_users_quota_are_refused_even_when_sent_together() {
    let file = png(50, 50, 10_000);
    let size = file.len() as u64;
    let app = TestApp::spawn_with(|config| config.media.quota_bytes_per_user = 2 * size).await;
    let publisher = app.publisher("facebook", "pro").await;
    let sent = futures_util::future::join_all(
        (0..6).map(|_| upload(&app, &publisher.key, "image/png", file.clone())),
    )
    .await;
    let accepted = sent.iter().filter(|(status, _)| *status == 201).count();
    assert_eq!(accepted, 2, "{sent:?}");
    for (status, answer) in sent.iter().filter(|(status, _)| *status != 201) {
        assert_eq!(
            (*status, answer["error"].as_str()),
            (400, Some("MediaQuotaExceeded")),
            "{answer}"
        );
    }
    let listed = library(&app, &publisher.key).await;
    assert_eq!(listed["total"], 2);
    assert_eq!(stored_files(&app).await, 2);

    // Deleting one makes room for one.
    let id = listed["media"][0]["id"].as_str().unwrap();
    let response = app
        .http
        .delete(app.url(&format!("/v2/media/{id}")))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        upload(&app, &publisher.key, "image/png", file.clone())
            .await
            .0,
        201
    );
    assert_eq!(upload(&app, &publisher.key, "image/png", file).await.0, 400);
    // Another user has a quota of their own.
    let other = app.publisher("facebook", "pro").await;
    assert_eq!(
        upload(&app, &other.key, "image/png", png(5, 5, 10)).await.0,
        201
    );
}

/// Requests our server answered for media file URLs, from its metrics.
fn file_requests(app: &TestApp) -> u64 {
    app.state
        .metrics
        .render()
        .lines()
        .filter(|line| {
            line.starts_with("http_requests_total{")
                && line.contains("route=\"/media/{id}/{file}\"")
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[actix_rt::test]
async fn posts_use_uploaded_files_which_the_service_reads_from_its_store() {
    let app = TestApp::spawn().await;
    // x: the service uploads the bytes itself, reading the file from the store.
    let x = app.publisher("x", "ultra").await;
    let jpeg = service_sim::media::SAMPLE_JPG.to_vec();
    let (status, answer) = upload(&app, &x.key, "image/jpeg", jpeg.clone()).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        (
            answer["media"]["width"].as_u64(),
            answer["media"]["height"].as_u64()
        ),
        (Some(1080), Some(1080))
    );
    let url = answer["media"]["url"].as_str().unwrap().to_string();
    let (status, answer) = app
        .post(
            &x.key,
            &x.body(serde_json::json!({"text": "from an upload", "mediaUrls": [url]})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let items = app.published(&x.sim);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].extra["media"][0]["size"], jpeg.len());
    assert_eq!(
        file_requests(&app),
        0,
        "the file was read from the store, not fetched"
    );

    // instagram: the platform fetches the file from its public URL.
    let instagram = app.publisher("instagram", "pro").await;
    let (_, answer) = upload(
        &app,
        &instagram.key,
        "image/png",
        service_sim::media::SAMPLE_PNG.to_vec(),
    )
    .await;
    let url = answer["media"]["url"].as_str().unwrap().to_string();
    let square = answer["media"]["id"].as_str().unwrap().to_string();
    let (status, answer) = app
        .post(
            &instagram.key,
            &instagram.body(serde_json::json!({"text": "square", "mediaUrls": [url]})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(app.published(&instagram.sim).len(), 1);
    assert!(file_requests(&app) >= 1, "the platform fetched the file");

    // An image instagram would refuse for its shape is refused before any call.
    let (_, answer) = upload(&app, &instagram.key, "image/png", png(1080, 1920, 100)).await;
    let tall = answer["media"]["url"].as_str().unwrap().to_string();
    let (status, answer) = app
        .post(
            &instagram.key,
            &instagram.body(serde_json::json!({"text": "tall", "mediaUrls": [tall]})),
        )
        .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("InvalidMediaType")),
        "{answer}"
    );
    assert_eq!(app.published(&instagram.sim).len(), 1);

    // A deleted file's URL no longer publishes.
    let id = square;
    let deleted = app
        .http
        .delete(app.url(&format!("/v2/media/{id}")))
        .header("service-api-key", &instagram.key)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::OK);
    let (status, answer) = app
        .post(
            &instagram.key,
            &instagram.body(serde_json::json!({"text": "gone", "mediaUrls": [url]})),
        )
        .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("MediaDownloadFailed")),
        "{answer}"
    );
    crate::helpers::assert_no_violations(&app.sim);
}

/// `GET /v2/media/{id}`'s status.
async fn medium_status(app: &TestApp, key: &str, id: &str) -> u16 {
    let response = app
        .http
        .get(app.url(&format!("/v2/media/{id}")))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

async fn uploaded_id(app: &TestApp, key: &str, body: Vec<u8>) -> (String, String) {
    let (status, answer) = upload(app, key, "image/jpeg", body).await;
    assert_eq!(status, 201, "{answer}");
    let media = &answer["media"];
    (
        media["id"].as_str().unwrap().to_string(),
        media["url"].as_str().unwrap().to_string(),
    )
}

#[actix_rt::test]
async fn files_are_deleted_a_retention_after_their_upload_or_their_last_use() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let jpeg = service_sim::media::SAMPLE_JPG.to_vec();
    let (unused, _) = uploaded_id(&app, &publisher.key, jpeg.clone()).await;
    let (used, used_url) = uploaded_id(&app, &publisher.key, jpeg.clone()).await;
    app.clock.advance(chrono::Duration::days(3));
    let (status, answer) = app
        .post(
            &publisher.key,
            &publisher.body(serde_json::json!({"text": "photo", "mediaUrls": [used_url]})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");

    // Seven days after the upload: the unused file goes, the used one stays.
    app.clock
        .advance(chrono::Duration::days(4) + chrono::Duration::minutes(1));
    let swept = app.state.media.sweep().await.unwrap();
    assert_eq!((swept.expired, swept.kept), (1, 0), "{swept:?}");
    assert_eq!(medium_status(&app, &publisher.key, &unused).await, 404);
    assert_eq!(medium_status(&app, &publisher.key, &used).await, 200);
    assert_eq!(stored_files(&app).await, 1);

    // Seven days after its use, the used one goes too, and its room in the quota comes back.
    app.clock.advance(chrono::Duration::days(3));
    assert_eq!(app.state.media.sweep().await.unwrap().expired, 1);
    assert_eq!(medium_status(&app, &publisher.key, &used).await, 404);
    assert_eq!(stored_files(&app).await, 0);
    assert_eq!(
        app.state
            .store
            .media_bytes(publisher.user_id)
            .await
            .unwrap(),
        0
    );
    let metrics = app.state.metrics.render();
    assert!(
        metrics.contains("media_swept_total{reason=\"expired\"} 2"),
        "{metrics}"
    );
}

#[actix_rt::test]
async fn a_file_named_by_a_scheduled_post_is_kept_until_the_post_has_ended() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let (id, url) = uploaded_id(
        &app,
        &publisher.key,
        service_sim::media::SAMPLE_JPG.to_vec(),
    )
    .await;
    let at = (app.clock_now() + chrono::Duration::days(30))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let (status, answer) = app
        .post(
            &publisher.key,
            &publisher
                .body(serde_json::json!({"text": "later", "mediaUrls": [url], "scheduledAt": at})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let scheduled = answer["scheduledPostId"].as_str().unwrap().to_string();

    app.clock.advance(chrono::Duration::days(8));
    let swept = app.state.media.sweep().await.unwrap();
    assert_eq!((swept.expired, swept.kept), (0, 1), "{swept:?}");
    assert_eq!(medium_status(&app, &publisher.key, &id).await, 200);

    // Cancelled, the post has ended: the file goes at the sweep after its time.
    let cancelled = app
        .http
        .delete(app.url(&format!("/api/scheduled-posts/{scheduled}")))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), StatusCode::OK);
    app.clock.advance(chrono::Duration::days(8));
    let swept = app.state.media.sweep().await.unwrap();
    assert_eq!((swept.expired, swept.kept), (1, 0), "{swept:?}");
    assert_eq!(medium_status(&app, &publisher.key, &id).await, 404);
}

#[actix_rt::test]
async fn the_sweep_removes_files_without_media_and_media_without_files() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let jpeg = service_sim::media::SAMPLE_JPG.to_vec();
    let (kept, kept_url) = uploaded_id(&app, &publisher.key, jpeg.clone()).await;
    let (lost, _) = uploaded_id(&app, &publisher.key, jpeg.clone()).await;
    // Its file disappears from the store behind the service's back.
    let objects = app.media_objects();
    objects.delete(lost.parse().unwrap()).await.unwrap();
    // A file no medium names.
    let stray = uuid::Uuid::new_v4();
    let mut writer = objects.writer(stray);
    writer.write(&jpeg).await.unwrap();
    writer.finish().await.unwrap();

    // Younger than the reconciliation's grace: left alone.
    let swept = app.state.media.sweep().await.unwrap();
    assert_eq!(
        (swept.objects_without_row, swept.rows_without_object),
        (0, 0)
    );

    app.clock.advance(chrono::Duration::hours(2));
    let swept = app.state.media.sweep().await.unwrap();
    assert_eq!(
        (
            swept.objects_without_row,
            swept.rows_without_object,
            swept.expired
        ),
        (1, 1, 0)
    );
    let left: Vec<uuid::Uuid> = objects
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(left, [kept.parse::<uuid::Uuid>().unwrap()]);
    assert_eq!(medium_status(&app, &publisher.key, &lost).await, 404);
    assert_eq!(medium_status(&app, &publisher.key, &kept).await, 200);
    assert_eq!(
        app.http.get(&kept_url).send().await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        app.state
            .store
            .media_bytes(publisher.user_id)
            .await
            .unwrap(),
        jpeg.len() as u64
    );
    let metrics = app.state.metrics.render();
    for reason in ["object_without_row", "row_without_object"] {
        assert!(
            metrics.contains(&format!("media_swept_total{{reason=\"{reason}\"}} 1")),
            "{reason}: {metrics}"
        );
    }
}

#[actix_rt::test]
async fn malformed_uploads_and_ranges_get_clear_answers() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let post = |content_type: Option<&'static str>, body: Vec<u8>| {
        let app = &app;
        let key = publisher.key.clone();
        async move {
            let mut request = app
                .http
                .post(app.url("/v2/media"))
                .header("service-api-key", key)
                .body(body);
            if let Some(content_type) = content_type {
                request = request.header(header::CONTENT_TYPE, content_type);
            }
            status_and_json(request.send().await.unwrap()).await
        }
    };
    // A form without a `file` part, and one whose boundary is missing.
    let (status, answer) = post(
        Some("multipart/form-data; boundary=x"),
        b"--x\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n--x--\r\n".to_vec(),
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("MissingParameter")),
        "{answer}"
    );
    let (status, answer) = post(Some("multipart/form-data"), b"whatever".to_vec()).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("InvalidRequest")),
        "{answer}"
    );
    // No declared type: the bytes decide.
    let (status, answer) = post(None, png(3, 4, 10)).await;
    assert_eq!(status, 201, "{answer}");
    let url = answer["media"]["url"].as_str().unwrap().to_string();
    // Ranges the service does not serve in part are answered with the whole file.
    for range in ["bytes=abc", "bytes=0-1,4-5", "items=0-3", "bytes=-"] {
        let response = app
            .http
            .get(&url)
            .header(header::RANGE, range)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{range}");
    }
    // Uploads need a key or a session; the file URLs need neither.
    let anonymous = app
        .http
        .post(app.url("/v2/media"))
        .header(header::CONTENT_TYPE, "image/png")
        .body(png(3, 4, 10))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(stored_files(&app).await, 1);
}

#[actix_rt::test]
async fn a_file_of_many_parts_is_stored_and_served_whole() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    // Over two of the S3 store's 5 MiB parts, sent in small pieces.
    let video = mp4(12 * 1024 * 1024 + 12_345);
    let pieces: Vec<Result<Bytes, std::io::Error>> = video
        .chunks(64 * 1024)
        .map(|piece| Ok(Bytes::copy_from_slice(piece)))
        .collect();
    let response = app
        .http
        .post(app.url("/v2/media"))
        .header("service-api-key", &publisher.key)
        .header(header::CONTENT_TYPE, "video/mp4")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            pieces,
        )))
        .send()
        .await
        .unwrap();
    let (status, answer) = status_and_json(response).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["media"]["size"], video.len());
    let digest = format!("{:x}", Sha256::digest(&video));
    assert_eq!(answer["media"]["sha256"], digest);
    let served = app
        .http
        .get(answer["media"]["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), StatusCode::OK);
    let body = served.bytes().await.unwrap();
    assert_eq!(format!("{:x}", Sha256::digest(&body)), digest);
}

#[actix_rt::test]
async fn uploads_have_a_body_deadline_of_their_own() {
    let app = TestApp::spawn_on_system_clock(|config| {
        config.server.request_body_timeout_secs = 1;
        config.media.upload_timeout_secs = 4;
    })
    .await;
    let publisher = app.publisher("facebook", "pro").await;
    let slow_upload = |stall: Option<Duration>| {
        let app = &app;
        let key = publisher.key.clone();
        async move {
            let file = png(10, 10, 2_000);
            let (head, tail) = file.split_at(1_000);
            let (head, tail) = (Bytes::copy_from_slice(head), Bytes::copy_from_slice(tail));
            let body = futures_util::stream::once(async move { Ok::<_, std::io::Error>(head) })
                .chain(futures_util::stream::once(async move {
                    match stall {
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => futures_util::future::pending::<()>().await,
                    }
                    Ok(tail)
                }));
            let response = app
                .http
                .post(app.url("/v2/media"))
                .header("service-api-key", key)
                .header(header::CONTENT_TYPE, "image/png")
                .body(reqwest::Body::wrap_stream(body))
                .send()
                .await
                .unwrap();
            status_and_json(response).await
        }
    };
    // Slower than every other route's deadline, within the upload's.
    let (status, answer) = slow_upload(Some(Duration::from_secs(2))).await;
    assert_eq!(status, 201, "{answer}");
    // A body that stops arriving gets the catalogue's timeout at the upload's deadline.
    let (status, answer) = slow_upload(None).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (408, Some("RequestTimeout")),
        "{answer}"
    );
    assert_eq!(stored_files(&app).await, 1);
}

#[actix_rt::test]
async fn uploaded_videos_publish_as_reels_with_a_cover_and_as_uploaded_videos() {
    let app = TestApp::spawn().await;
    let upload_url = |key: String, content_type: &'static str, bytes: &'static [u8]| {
        let app = &app;
        async move {
            let (status, answer) = upload(app, &key, content_type, bytes.to_vec()).await;
            assert_eq!(status, 201, "{answer}");
            answer["media"]["url"].as_str().unwrap().to_string()
        }
    };
    // youtube and tiktok take the file's bytes from the service, which reads them from the store.
    let youtube = app.publisher("youtube", "pro").await;
    let video = upload_url(
        youtube.key.clone(),
        "video/mp4",
        service_sim::media::SAMPLE_MP4,
    )
    .await;
    let thumbnail = upload_url(
        youtube.key.clone(),
        "image/jpeg",
        service_sim::media::SAMPLE_JPG,
    )
    .await;
    let (status, answer) = app
        .post(
            &youtube.key,
            &youtube.body(serde_json::json!({"text": "A title\n\nA description", "mediaUrls": [video, thumbnail]})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let tiktok = app.publisher("tiktok", "pro").await;
    let clip = upload_url(
        tiktok.key.clone(),
        "video/quicktime",
        service_sim::media::SAMPLE_MOV,
    )
    .await;
    let (status, answer) = app
        .post(
            &tiktok.key,
            &tiktok.body(serde_json::json!({"text": "A clip", "mediaUrls": [clip]})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(app.published(&youtube.sim).len(), 1);
    assert_eq!(app.published(&tiktok.sim).len(), 1);
    assert_eq!(file_requests(&app), 0, "read from the store, not fetched");

    // An instagram reel and its cover are fetched by the platform from their URLs.
    let instagram = app.publisher("instagram", "pro").await;
    let reel = upload_url(
        instagram.key.clone(),
        "video/mp4",
        service_sim::media::SAMPLE_MP4,
    )
    .await;
    let cover = upload_url(
        instagram.key.clone(),
        "image/png",
        service_sim::media::SAMPLE_PNG,
    )
    .await;
    let (status, answer) = app
        .post(
            &instagram.key,
            &instagram.body(
                serde_json::json!({"text": "A reel", "mediaUrls": [reel], "coverUrl": cover}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["post_type"], "reels");
    assert!(
        file_requests(&app) >= 2,
        "the platform fetched the reel and its cover"
    );
    crate::helpers::assert_no_violations(&app.sim);
}
