//! The publish path's write budget (one write before the irreversible call, one after), what an
//! interrupted publish leaves for settlement, given that its row is written at the final call, and
//! the group commit that runs writes arriving together in one transaction.

use std::sync::{Arc, Mutex};

use entity::post_submission::{PostType, SubmissionStatus};
use secrecy::SecretString;
use serde_json::json;
use service_sim::state::{FaultKind, FaultSpec};
use social_service::{
    background::scheduler::Drain,
    domain::plan::{Platform, PublishPlan, ThreadsPost},
    media::MediaFetcher,
    platforms::{AccountCredentials, StepKind},
    publish::{
        run::{JobResult, JobSpec, PublishDeps, run_job_probed},
        steps::{ClaimFence, FinalProbe, StepRecorder},
    },
    services::scheduling::settle_expired_claims,
    store::{DbCounts, NewSubmission, PublishWrite, SubmissionRow},
};
use uuid::Uuid;

use crate::helpers::{Publisher, TestApp};

/// The account actor's dependencies, built from the app as `Application::build` builds them.
fn deps(app: &TestApp) -> Arc<PublishDeps> {
    let config = &app.config;
    Arc::new(PublishDeps {
        store: app.state.store.clone(),
        clock: app.state.clock.clone(),
        cipher: app.state.cipher.clone(),
        http: reqwest::Client::new(),
        media: MediaFetcher::new(
            &config.publishing.media_allow_hosts,
            config.publishing.max_media_bytes,
        )
        .unwrap(),
        platforms: config.platforms.clone(),
        publishing: config.publishing.clone(),
        oauth: config.oauth.clone(),
        metrics: Default::default(),
        cluster: app.state.cluster.clone(),
    })
}

fn credentials(publisher: &Publisher) -> AccountCredentials {
    AccountCredentials {
        external_id: publisher.sim.external_id.clone(),
        display_name: publisher.sim.name.as_str().into(),
        access_token: SecretString::from(publisher.sim.access_token.clone()),
        login_route: Default::default(),
    }
}

fn text_job(publisher: &Publisher, text: &str, claim: Option<ClaimFence>) -> JobSpec {
    JobSpec {
        submission_id: Uuid::new_v4(),
        user_id: publisher.user_id,
        account_id: publisher.account.id,
        page_name: publisher.account.display_name.clone(),
        plan: PublishPlan::Threads(ThreadsPost::Text { text: text.into() }),
        content: json!({"text": text, "media_urls": []}),
        reserved_counter: None,
        claim,
        announce: None,
        lease: None,
        budget: None,
    }
}

fn new_row(publisher: &Publisher, scheduled_post_id: Option<Uuid>, app: &TestApp) -> SubmissionRow {
    let now = app.clock_now();
    SubmissionRow {
        id: Uuid::new_v4(),
        new: NewSubmission {
            user_id: publisher.user_id,
            account_id: publisher.account.id,
            platform: Platform::Threads,
            post_type: Some(PostType::Text),
            post_id: None,
            status: SubmissionStatus::Publishing,
            page_name: publisher.account.display_name.clone(),
            content: json!({"text": "row", "media_urls": []}),
            result: None,
            error_code: None,
            error_message: None,
            published_at: None,
        },
        steps: Default::default(),
        scheduled_post_id,
        created_at: now,
        updated_at: now,
        publisher: None,
    }
}

/// Runs a job, reading the store's statement counts when its final call is cleared to go.
async fn run_counted(
    app: &TestApp,
    publisher: &Publisher,
    job: JobSpec,
) -> (JobResult, Option<DbCounts>, DbCounts, DbCounts) {
    let store = app.state.store.clone();
    let at_final: Arc<Mutex<Option<DbCounts>>> = Arc::default();
    let seen = at_final.clone();
    let probe: FinalProbe = Arc::new(move || {
        *seen.lock().unwrap() = Some(store.db_counts());
    });
    let before = app.state.store.db_counts();
    let result = run_job_probed(deps(app), credentials(publisher), job, Some(probe)).await;
    let after = app.state.store.db_counts();
    let at_final = *at_final.lock().unwrap();
    (result, at_final, before, after)
}

/// A threads text post (container → status → publish) writes its history row once before the
/// final platform call and once after it (it wrote 5 times before group commit's change: the
/// row, the container step, the processing step, `final_started`, the published id, the outcome
/// being the sixth).
#[actix_web::test]
async fn a_threads_text_publish_writes_once_before_its_final_call_and_once_after() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    // Nothing else writes meanwhile: the scheduler's passes (a claim is an UPDATE even when
    // nothing is due) would count. Drained, and its last look at the table over.
    let scheduler = app.state.background.scheduler().unwrap();
    let started = std::time::Instant::now();
    while scheduler.send(Drain).await.unwrap() > 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the scheduler's pass never ended"
        );
        tokio::task::yield_now().await;
    }
    let job = text_job(&publisher, "budget", None);
    let id = job.submission_id;
    let (result, at_final, before, after) = run_counted(&app, &publisher, job).await;
    let receipt = result.outcome.expect("published");
    let at_final = at_final.expect("the adapter announced its final call");
    let writes_before = at_final.since(before).writes;
    let writes_after = after.since(at_final).writes;
    assert!(
        writes_before <= 1 && writes_after <= 1,
        "writes before the final call: {writes_before}, after: {writes_after}"
    );
    // And those writes are the whole history: the row, its steps and outcome.
    let row = app.state.store.find_submission(id).await.unwrap().unwrap();
    assert_eq!(row.status, SubmissionStatus::Published);
    assert_eq!(row.post_id.as_deref(), Some(receipt.post_id.as_str()));
    let steps = row.steps.unwrap();
    assert!(steps.final_started);
    // A text post is created and published in one call: no container.
    assert!(steps.ids(StepKind::Container).is_empty());
    assert_eq!(steps.ids(StepKind::Post), vec![receipt.post_id.clone()]);
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

/// A scheduled post's attempt cut off before its final call leaves no history row (its steps
/// were only in memory) and no link on the post: settlement retries it, never `unconfirmed`.
/// Also when an earlier attempt of the same post reached its final call and was refused (a rate
/// limit): that attempt's row, `final_started`, must not decide the later attempt's settlement.
#[actix_web::test]
async fn an_attempt_cut_off_before_its_final_call_is_retried_never_unconfirmed() {
    let app = TestApp::spawn_with(|c| c.scheduler.lease_secs = 2).await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    app.state
        .background
        .scheduler()
        .unwrap()
        .send(Drain)
        .await
        .unwrap();
    let when = (app.clock_now() + chrono::Duration::seconds(61))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher.body(json!({"text": "cut off", "scheduledAt": when})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    app.clock.advance(chrono::Duration::seconds(62));
    let claim = |now| async move {
        let claimed = store
            .claim_due_posts("dead-instance", now, now + chrono::Duration::seconds(1), 10)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        claimed.into_iter().next().unwrap()
    };
    let fence = |post: &entity::scheduled_post::Model| ClaimFence {
        scheduled_post_id: post.id,
        claimant: "dead-instance".into(),
        attempt: post.attempts,
        lease: chrono::Duration::seconds(1),
        clock: app.state.clock.clone(),
    };

    // Attempt 1: the platform refuses the final call with its rate limit (nothing went out).
    // A text post's one call is its final call.
    let post = claim(app.clock_now()).await;
    app.sim.state().set_faults(
        "threads",
        &publisher.sim.external_id,
        FaultSpec {
            error: Some(FaultKind::RateLimit),
            times: Some(1),
            ..FaultSpec::default()
        },
    );
    let job = text_job(&publisher, "cut off", Some(fence(&post)));
    let first = job.submission_id;
    let result = run_job_probed(deps(&app), credentials(&publisher), job, None).await;
    assert!(result.outcome.is_err() && result.retryable);
    let refused = store.find_submission(first).await.unwrap().unwrap();
    assert_eq!(refused.status, SubmissionStatus::Failed);
    assert!(refused.steps.unwrap().final_started);
    // Retried, as the scheduler does.
    let now = app.clock_now();
    assert!(
        store
            .reschedule_post(post.id, "dead-instance", now, "rate limited", now, None)
            .await
            .unwrap()
    );

    // Attempt 2 records its container, then the process dies before the final call.
    let post = claim(app.clock_now()).await;
    assert_eq!(post.attempts, 2);
    let row = new_row(&publisher, Some(post.id), &app);
    let second = row.id;
    let recorder = StepRecorder::for_new_submission(store.clone(), row)
        .with_fence(Some(fence(&post)))
        .with_clock(app.state.clock.clone());
    recorder.record(StepKind::Container, "1").await.unwrap();
    drop(recorder);
    assert!(store.find_submission(second).await.unwrap().is_none());

    // The lease passes; settlement retries the post.
    app.clock.advance(chrono::Duration::seconds(5));
    assert_eq!(
        settle_expired_claims(&app.state.scheduling).await.unwrap(),
        1
    );
    let settled = store.find_scheduled_post(post.id).await.unwrap().unwrap();
    assert_eq!(
        settled.status.as_str(),
        "scheduled",
        "retried: the final call was never made ({:?})",
        settled.error
    );
    assert!(store.find_submission(second).await.unwrap().is_none());
    // The refused attempt's row is as it ended, and nothing went out.
    let refused = store.find_submission(first).await.unwrap().unwrap();
    assert_eq!(refused.status, SubmissionStatus::Failed);
    assert!(app.published(&publisher.sim).is_empty());
}

/// An immediate publish cut off before its final call leaves nothing for the stale-publish
/// settlement to call `unconfirmed`: no row at all.
#[actix_web::test]
async fn an_immediate_publish_cut_off_before_its_final_call_leaves_no_row() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    let row = new_row(&publisher, None, &app);
    let id = row.id;
    let recorder = StepRecorder::for_new_submission(store.clone(), row);
    recorder.record(StepKind::Container, "1").await.unwrap();
    drop(recorder);
    app.clock.advance(chrono::Duration::seconds(1_801));
    settle_expired_claims(&app.state.scheduling).await.unwrap();
    assert!(store.find_submission(id).await.unwrap().is_none());
    // Cut off after it: the row says the final call started, and settlement says unconfirmed.
    let row = new_row(&publisher, None, &app);
    let id = row.id;
    let recorder = StepRecorder::for_new_submission(store.clone(), row);
    recorder.before_final().await.unwrap();
    drop(recorder);
    app.clock.advance(chrono::Duration::seconds(1_801));
    settle_expired_claims(&app.state.scheduling).await.unwrap();
    let row = store.find_submission(id).await.unwrap().unwrap();
    assert_eq!(row.status, SubmissionStatus::Unconfirmed);
}

/// Writes that arrive together share one transaction, and each caller gets its own answer: a
/// conditional write that matched nothing is that caller's `false`, a write that fails (a
/// duplicate id) fails alone after the batch is retried write by write.
#[actix_web::test]
async fn writes_arriving_together_commit_together_and_answer_each_caller() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    let now = app.clock_now();
    let rows: Vec<SubmissionRow> = (0..6).map(|_| new_row(&publisher, None, &app)).collect();
    let before_final = |row: &SubmissionRow| {
        let mut row = row.clone();
        row.steps.final_started = true;
        PublishWrite::BeforeFinal { row, claim: None }
    };

    // Six rows at once: one transaction.
    let stats = store.group_commit_stats();
    let answers = futures_util::future::join_all(
        rows.iter()
            .map(|row| store.publish_write(before_final(row))),
    )
    .await;
    assert!(answers.iter().all(|a| matches!(a, Ok(true))), "{answers:?}");
    let after = store.group_commit_stats();
    assert_eq!(after.writes - stats.writes, 6);
    assert_eq!(
        after.transactions - stats.transactions,
        1,
        "six writes queued together, one commit"
    );
    // On SQLite they were answered after a sync of the WAL.
    if app.state.store.backend() == sea_orm::DbBackend::Sqlite {
        assert!(after.wal_syncs > stats.wal_syncs);
    }

    // Their outcomes, with a write that matches no row and one that cannot be written.
    let mut writes: Vec<PublishWrite> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| PublishWrite::Published {
            id: row.id,
            post_id: format!("post-{i}"),
            result: json!({}),
            steps: None,
            now,
        })
        .collect();
    writes.push(PublishWrite::Failed {
        id: Uuid::new_v4(),
        status: SubmissionStatus::Failed,
        error_code: "PublishingFailed".into(),
        message: "no such row".into(),
        steps: None,
        now,
        unlink: None,
    });
    writes.push(before_final(&rows[0]));
    let answers =
        futures_util::future::join_all(writes.into_iter().map(|w| store.publish_write(w))).await;
    for answer in &answers[..6] {
        assert!(matches!(answer, Ok(true)), "{answers:?}");
    }
    assert!(matches!(answers[6], Ok(false)), "{answers:?}");
    assert!(answers[7].is_err(), "a duplicate row: {answers:?}");
    for (i, row) in rows.iter().enumerate() {
        let stored = store.find_submission(row.id).await.unwrap().unwrap();
        assert_eq!(stored.status, SubmissionStatus::Published);
        assert_eq!(stored.post_id, Some(format!("post-{i}")));
    }
}

fn step(kind: StepKind, id: &str) -> entity::post_submission::Step {
    entity::post_submission::Step {
        kind,
        id: id.into(),
        outcome: None,
        at: None,
    }
}

/// A batch's outcomes go out in one statement and still answer each caller: a row that does not
/// exist is its caller's `false`, the others' `true`; steps given are written, rows given none
/// keep theirs; new rows of one batch are inserted together.
#[actix_web::test]
async fn a_batch_of_outcomes_answers_each_caller_and_keeps_untouched_steps() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    let now = app.clock_now();
    let rows: Vec<SubmissionRow> = (0..5)
        .map(|i| {
            let mut row = new_row(&publisher, None, &app);
            row.steps.final_started = true;
            row.steps
                .steps
                .push(step(StepKind::Container, &format!("container-{i}")));
            row
        })
        .collect();
    let stats = store.group_commit_stats();
    let inserted = futures_util::future::join_all(rows.iter().map(|row| {
        store.publish_write(PublishWrite::BeforeFinal {
            row: row.clone(),
            claim: None,
        })
    }))
    .await;
    assert!(
        inserted.iter().all(|a| matches!(a, Ok(true))),
        "{inserted:?}"
    );
    let missing = Uuid::new_v4();
    let mut writes: Vec<PublishWrite> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            // Even rows end with one more step; odd rows keep what they had.
            let steps = (i % 2 == 0).then(|| {
                let mut steps = row.steps.clone();
                steps.steps.push(step(StepKind::Post, &format!("post-{i}")));
                steps
            });
            PublishWrite::Published {
                id: row.id,
                post_id: format!("post-{i}"),
                result: json!({"n": i}),
                steps,
                now,
            }
        })
        .collect();
    writes.insert(
        2,
        PublishWrite::Published {
            id: missing,
            post_id: "nowhere".into(),
            result: json!({}),
            steps: None,
            now,
        },
    );
    let answers =
        futures_util::future::join_all(writes.into_iter().map(|w| store.publish_write(w))).await;
    let after = store.group_commit_stats();
    assert_eq!(after.transactions - stats.transactions, 2, "one per batch");
    assert!(matches!(answers[2], Ok(false)), "{answers:?}");
    for (i, answer) in answers.iter().enumerate() {
        if i != 2 {
            assert!(matches!(answer, Ok(true)), "{i}: {answers:?}");
        }
    }
    assert!(store.find_submission(missing).await.unwrap().is_none());
    for (i, row) in rows.iter().enumerate() {
        let stored = store.find_submission(row.id).await.unwrap().unwrap();
        assert_eq!(stored.status, SubmissionStatus::Published);
        assert_eq!(stored.post_id, Some(format!("post-{i}")));
        assert_eq!(stored.result, Some(json!({"n": i})));
        let steps = stored.steps.unwrap();
        assert!(steps.final_started);
        let kinds: Vec<StepKind> = steps.steps.iter().map(|s| s.kind).collect();
        if i % 2 == 0 {
            assert_eq!(kinds, [StepKind::Container, StepKind::Post], "row {i}");
        } else {
            assert_eq!(kinds, [StepKind::Container], "row {i}");
        }
    }
}

/// Every column of a row as the database holds it, type included (SQLite's `quote`), so two
/// rows written by different statements can be compared value for value; PostgreSQL: each
/// column's text.
async fn stored_columns(store: &social_service::store::Store, id: Uuid) -> Vec<String> {
    use sea_orm::{ConnectionTrait, DbBackend, Statement};
    const COLUMNS: [&str; 21] = [
        "user_id",
        "account_id",
        "platform",
        "post_type",
        "post_id",
        "status",
        "page_name",
        "content",
        "result",
        "steps",
        "error_code",
        "error_message",
        "scheduled_post_id",
        "created_at",
        "published_at",
        "updated_at",
        "reconcile",
        "next_check_at",
        "check_until",
        "check_claimed_by",
        "check_lease_until",
    ];
    let db = store.connection();
    let backend = db.get_database_backend();
    let select = COLUMNS
        .iter()
        .map(|c| match backend {
            DbBackend::Sqlite => format!("quote({c}) AS {c}"),
            _ => format!("coalesce({c}::text, '<null>') AS {c}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let placeholder = if backend == DbBackend::Sqlite {
        "?"
    } else {
        "$1"
    };
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            format!("SELECT {select} FROM post_submissions WHERE id = {placeholder}"),
            [id.into()],
        ))
        .await
        .unwrap()
        .unwrap();
    COLUMNS
        .iter()
        .map(|c| format!("{c}={}", row.try_get::<String>("", c).unwrap()))
        .collect()
}

/// The group commit writes a batch in one statement text of its own on SQLite (its rows and
/// outcomes as JSON parameters): what it stores must be exactly what SeaORM's own insert and
/// update store for the same values, or rows written by the two paths would sort, compare or
/// read differently. Compared column by column, with values that test the encodings (quotes,
/// non-ASCII text, a newline, nanoseconds, nested JSON), for a new row and for both kinds of
/// `published` outcome (with steps, and without: the row keeps its own).
#[actix_web::test]
async fn the_one_trip_batch_writes_what_single_statements_write() {
    use entity::post_submission;
    use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    let at = app.clock_now() + chrono::Duration::nanoseconds(123_456_789);
    let row = |id: Uuid| {
        let mut row = new_row(&publisher, None, &app);
        row.id = id;
        row.new.post_type = Some(PostType::Text);
        row.new.post_id = Some("17841400000000001".into());
        row.new.page_name = "Café \"☕\" Ünïcode".into();
        row.new.content = json!({"text": "line one\nline \"two\" — ✓", "media_urls": ["https://a.example/x.png"], "z": 1.5, "a": null});
        row.new.result = Some(json!({"thread_count": 2, "post_ids": ["1", "2"]}));
        row.new.error_code = Some("PublishingFailed".into());
        row.new.error_message = Some("it said:\n\"no\"".into());
        row.new.published_at = Some(at);
        row.steps.final_started = true;
        row.steps
            .steps
            .push(step(StepKind::Container, "container-1"));
        row.created_at = at;
        row.updated_at = at + chrono::Duration::microseconds(7);
        row
    };
    // SeaORM's own statements, as the write-by-write path runs them.
    let insert_alone = |row: &SubmissionRow| {
        let new = row.new.clone();
        post_submission::Entity::insert(post_submission::ActiveModel {
            id: Set(row.id),
            user_id: Set(new.user_id),
            account_id: Set(new.account_id),
            platform: Set(new.platform),
            post_type: Set(new.post_type),
            post_id: Set(new.post_id),
            status: Set(new.status),
            page_name: Set(new.page_name),
            content: Set(new.content),
            result: Set(new.result),
            steps: Set(Some(row.steps.clone())),
            error_code: Set(new.error_code),
            error_message: Set(new.error_message),
            scheduled_post_id: Set(row.scheduled_post_id),
            created_at: Set(row.created_at),
            published_at: Set(new.published_at),
            updated_at: Set(row.updated_at),
            reconcile: Set(None),
            next_check_at: Set(None),
            check_until: Set(None),
            check_claimed_by: Set(None),
            check_lease_until: Set(None),
            publisher: Set(None),
        })
    };
    let (batched, alone) = (row(Uuid::now_v7()), row(Uuid::now_v7()));
    // Two writes queued together, so the batch holds more than one row.
    let other = row(Uuid::now_v7());
    let answers = futures_util::future::join_all([&batched, &other].map(|row| {
        store.publish_write(PublishWrite::BeforeFinal {
            row: row.clone(),
            claim: None,
        })
    }))
    .await;
    assert!(answers.iter().all(|a| matches!(a, Ok(true))), "{answers:?}");
    insert_alone(&alone)
        .exec_without_returning(store.connection())
        .await
        .unwrap();
    assert_eq!(
        stored_columns(store, batched.id).await,
        stored_columns(store, alone.id).await,
        "a new row"
    );

    let later = at + chrono::Duration::nanoseconds(987_654_321);
    let mut final_steps = batched.steps.clone();
    final_steps.steps.push(step(StepKind::Post, "post-1"));
    for steps in [Some(final_steps), None] {
        let result = json!({"post_ids": ["é", "2"], "n": 3});
        let answers = futures_util::future::join_all([&batched, &other].map(|row| {
            store.publish_write(PublishWrite::Published {
                id: row.id,
                post_id: "post \"1\" ✓".into(),
                result: result.clone(),
                steps: steps.clone(),
                now: later,
            })
        }))
        .await;
        assert!(answers.iter().all(|a| matches!(a, Ok(true))), "{answers:?}");
        let mut update = post_submission::Entity::update_many()
            .col_expr(
                post_submission::Column::Status,
                Expr::value(SubmissionStatus::Published.as_str()),
            )
            .col_expr(
                post_submission::Column::PostId,
                Expr::value("post \"1\" ✓".to_string()),
            )
            .col_expr(post_submission::Column::Result, Expr::value(result))
            .col_expr(post_submission::Column::PublishedAt, Expr::value(later))
            .col_expr(post_submission::Column::UpdatedAt, Expr::value(later));
        if let Some(steps) = &steps {
            update = update.col_expr(post_submission::Column::Steps, Expr::value(steps.clone()));
        }
        update
            .filter(post_submission::Column::Id.eq(alone.id))
            .exec(store.connection())
            .await
            .unwrap();
        assert_eq!(
            stored_columns(store, batched.id).await,
            stored_columns(store, alone.id).await,
            "an outcome with steps: {}",
            steps.is_some()
        );
    }
    let stored = store.find_submission(batched.id).await.unwrap().unwrap();
    assert_eq!(stored.status, SubmissionStatus::Published);
    assert_eq!(stored.steps.unwrap().steps.len(), 2);
}

/// A batch that fails (here a row that already exists, sharing a multi-row insert with a new
/// one) is rolled back and retried write by write: the new row is written, the duplicate fails
/// alone, and the writes after it commit as usual (no transaction left open behind them).
#[actix_web::test]
async fn a_failed_batch_is_rolled_back_and_retried_write_by_write() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    let before_final = |row: &SubmissionRow| PublishWrite::BeforeFinal {
        row: row.clone(),
        claim: None,
    };
    let existing = new_row(&publisher, None, &app);
    assert!(matches!(
        store.publish_write(before_final(&existing)).await,
        Ok(true)
    ));
    let fresh = new_row(&publisher, None, &app);
    let answers = futures_util::future::join_all([
        store.publish_write(before_final(&fresh)),
        store.publish_write(before_final(&existing)),
    ])
    .await;
    assert!(matches!(answers[0], Ok(true)), "{answers:?}");
    assert!(answers[1].is_err(), "a duplicate row: {answers:?}");
    assert!(store.find_submission(fresh.id).await.unwrap().is_some());
    // The next writes commit: read back through another connection of the pool.
    let later: Vec<SubmissionRow> = (0..3).map(|_| new_row(&publisher, None, &app)).collect();
    let answers = futures_util::future::join_all(
        later
            .iter()
            .map(|row| store.publish_write(before_final(row))),
    )
    .await;
    assert!(answers.iter().all(|a| matches!(a, Ok(true))), "{answers:?}");
    for row in &later {
        assert!(store.find_submission(row.id).await.unwrap().is_some());
    }
}

/// SQLite: the group commit's own connection never waits for the write lock (it writes on an
/// actor's thread). A batch that finds another connection writing goes, whole, through
/// the pool instead, which waits: one transaction once the lock is free, every caller answered,
/// every row there. (On PostgreSQL the batch takes that path anyway.)
#[actix_web::test]
async fn a_batch_that_finds_the_database_being_written_waits_in_the_pool_and_is_written() {
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = app.state.store.clone();
    // Another connection of the pool holds the write lock (an UPDATE begins the write).
    let holder = store.connection().begin().await.unwrap();
    holder
        .execute_unprepared("UPDATE accounts SET display_name = display_name")
        .await
        .unwrap();
    let rows: Vec<SubmissionRow> = (0..3).map(|_| new_row(&publisher, None, &app)).collect();
    let before = store.group_commit_stats();
    // The lock is let go once the batch has found it held and gone to the pool (on
    // PostgreSQL, where no batch is handed over, right away).
    let on_sqlite = app.sqlite_url.is_some();
    let watched = store.clone();
    let release = actix_web::rt::spawn(async move {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while on_sqlite
            && watched.group_commit_stats().handed_to_pool == before.handed_to_pool
            && std::time::Instant::now() < deadline
        {
            actix_web::rt::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        holder.commit().await
    });
    let answers = futures_util::future::join_all(
        rows.iter()
            .cloned()
            .map(|row| store.publish_write(PublishWrite::BeforeFinal { row, claim: None })),
    )
    .await;
    release.await.unwrap().unwrap();
    assert!(answers.iter().all(|a| matches!(a, Ok(true))), "{answers:?}");
    // One batch in one transaction: not an error on the own connection retried write by write.
    let after = store.group_commit_stats();
    assert_eq!(
        (
            after.writes - before.writes,
            after.transactions - before.transactions
        ),
        (3, 1)
    );
    if on_sqlite {
        assert_eq!(after.handed_to_pool - before.handed_to_pool, 1);
    }
    for row in &rows {
        let stored = store
            .find_submission(row.id)
            .await
            .unwrap()
            .expect("written");
        assert_eq!(stored.status, SubmissionStatus::Publishing);
    }
}

/// Concurrent publishes through the group commit: every row ends right, each post once.
#[actix_web::test]
async fn concurrent_publishes_each_end_their_own_row() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let jobs: Vec<JobSpec> = (0..8)
        .map(|i| text_job(&publisher, &format!("together {i}"), None))
        .collect();
    let ids: Vec<Uuid> = jobs.iter().map(|j| j.submission_id).collect();
    let stats = app.state.store.group_commit_stats();
    let results = futures_util::future::join_all(
        jobs.into_iter()
            .map(|job| run_job_probed(deps(&app), credentials(&publisher), job, None)),
    )
    .await;
    let after = app.state.store.group_commit_stats();
    for (id, result) in ids.iter().zip(results) {
        let receipt = result.outcome.expect("published");
        let row = app.state.store.find_submission(*id).await.unwrap().unwrap();
        assert_eq!(row.status, SubmissionStatus::Published);
        assert_eq!(row.post_id, Some(receipt.post_id));
    }
    assert_eq!(
        after.writes - stats.writes,
        16,
        "one write before, one after"
    );
    assert!(after.transactions - stats.transactions <= 16);
    assert_eq!(app.published(&publisher.sim).len(), 8);
}

/// `POST /v2/posts` past its time limit tells the client to look for its history row before
/// retrying. The row is otherwise first written at the final call; a publish still before it
/// (here: a threads container being created) writes it when the caller stops waiting, so the
/// client finds it in the history the moment it gets the 504, and it then ends published once.
#[actix_web::test]
async fn a_timed_out_publish_is_in_the_history_when_the_caller_gets_504() {
    let app = TestApp::spawn_with(|c| c.publishing.request_timeout_secs = 1).await;
    let publisher = app.publisher("threads", "pro").await;
    app.sim.state().set_faults(
        "threads",
        &publisher.sim.external_id,
        FaultSpec {
            latency_ms: 1_500,
            ..FaultSpec::default()
        },
    );
    let (status, body) = app
        .post(&publisher.key, &publisher.body(json!({"text": "slow"})))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (504, Some("Timeout")),
        "{body}"
    );
    let history = app.history(&publisher.dashboard).await;
    assert_eq!(history["total"], 1, "no history row at the 504: {history}");
    assert_eq!(history["posts"][0]["status"], "publishing", "{history}");
    let id = history["posts"][0]["post_submission_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(body["message"].as_str().unwrap().contains(&id), "{body}");
    assert!(app.published(&publisher.sim).is_empty());
    // The publish carries on to its end, once, on the same row.
    let history = loop {
        let history = app.history(&publisher.dashboard).await;
        if history["posts"][0]["status"] != "publishing" {
            break history;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(history["total"], 1, "{history}");
    assert_eq!(history["posts"][0]["status"], "published", "{history}");
    assert_eq!(history["posts"][0]["post_submission_id"], id.as_str());
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

/// Under a steady stream of publishes the SQLite WAL stays bounded: the group commit's drainer
/// waits for its periodic checkpoint, so that SQLite can start the WAL over from its beginning.
/// With the checkpoint running beside the writer it never caught up, and the WAL grew with every
/// batch (380 MB after 8 s of the service bench). On PostgreSQL there is no WAL file of ours.
#[actix_web::test]
async fn a_steady_stream_of_writes_keeps_the_sqlite_wal_bounded() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let app = TestApp::spawn().await;
    let Some(url) = app.sqlite_url.clone() else {
        return;
    };
    let wal = format!(
        "{}-wal",
        url.trim_start_matches("sqlite://")
            .split('?')
            .next()
            .unwrap()
    );
    let wal_size = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    let publisher = Arc::new(app.publisher("threads", "pro").await);
    let store = app.state.store.clone();
    let start = store.group_commit_stats().transactions;
    let stop = Arc::new(AtomicBool::new(false));
    // Sixteen publishes at a time, each its write before and its write after, until stopped.
    let writers: Vec<_> = (0..16)
        .map(|_| {
            let (store, stop, publisher) = (store.clone(), stop.clone(), publisher.clone());
            let app_now = app.clock_now();
            let template = new_row(&publisher, None, &app);
            actix_web::rt::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let mut row = template.clone();
                    row.id = social_service::store::new_row_id();
                    row.steps.final_started = true;
                    let id = row.id;
                    let wrote = store
                        .publish_write(PublishWrite::BeforeFinal { row, claim: None })
                        .await;
                    assert!(matches!(wrote, Ok(true)), "{wrote:?}");
                    let wrote = store
                        .publish_write(PublishWrite::Published {
                            id,
                            post_id: format!("p-{id}"),
                            result: json!({}),
                            steps: None,
                            now: app_now,
                        })
                        .await;
                    assert!(matches!(wrote, Ok(true)), "{wrote:?}");
                }
            })
        })
        .collect();
    let batches = || store.group_commit_stats().transactions - start;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let wait_for = |n: u64| async move {
        while batches() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "only {} batches in two minutes",
                batches()
            );
            actix_web::rt::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    };
    // The checkpoint comes every 256 batches: the WAL's size after a little more than one
    // stretch of them, then after five.
    wait_for(300).await;
    let early = wal_size();
    wait_for(1_300).await;
    let late = wal_size();
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    assert!(early > 0, "the WAL is in use");
    assert!(
        late <= early * 2,
        "the WAL grew from {early} to {late} bytes over four more checkpoint intervals"
    );
}
