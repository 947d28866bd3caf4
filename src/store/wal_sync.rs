//! Syncs SQLite's WAL to disk for the group commit, on a thread of its own.
//!
//! The group commit's connection (`sqlite_writer.rs`) writes on an actor's thread, so it runs
//! with `synchronous = NORMAL`: a commit appends to the WAL without waiting for the disk. With
//! `database.sqlite_synchronous = "full"`, a batch's writers are answered only once this thread
//! has synced the WAL (`fdatasync`) after the batch's commit, so the record a publish writes
//! before its irreversible call is on stable storage before the call. That is what SQLite's own
//! `synchronous = FULL` does at each commit, without stopping the actor's thread for the disk:
//! the drainer writes the next batch while this thread syncs the last one, and one sync covers
//! every commit made before it started.

use std::{
    fs::File,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
};

use sea_orm::DbErr;
use tokio::sync::oneshot;

type Waiter = oneshot::Sender<Result<(), String>>;

/// The handle of the syncing thread; the thread ends when the last handle is dropped.
#[derive(Debug)]
pub struct WalSyncer {
    requests: mpsc::Sender<Waiter>,
    /// Syncs completed.
    syncs: Arc<AtomicU64>,
}

impl WalSyncer {
    /// Starts the thread for the database file at `database_path` (its WAL is `{path}-wal`).
    pub fn start(database_path: &str) -> Result<Self, DbErr> {
        let wal = PathBuf::from(format!("{database_path}-wal"));
        let (requests, incoming) = mpsc::channel::<Waiter>();
        let syncs = Arc::new(AtomicU64::new(0));
        let counted = syncs.clone();
        std::thread::Builder::new()
            .name("sqlite-wal-sync".into())
            .spawn(move || run(&wal, &incoming, &counted))
            .map_err(|e| DbErr::Custom(format!("cannot start the WAL sync thread: {e}")))?;
        Ok(Self { requests, syncs })
    }

    /// Syncs completed so far.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Resolves once everything committed to the WAL before this call is on disk.
    pub async fn synced(&self) -> Result<(), DbErr> {
        let (waiter, answer) = oneshot::channel();
        self.requests
            .send(waiter)
            .map_err(|_| DbErr::Custom("the WAL sync thread has stopped".into()))?;
        match answer.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(DbErr::Custom(format!(
                "the database could not sync to disk: {error}"
            ))),
            Err(_) => Err(DbErr::Custom("the WAL sync thread has stopped".into())),
        }
    }
}

/// Serves requests until every handle is gone: takes all that are waiting, syncs once, answers
/// them all. A request that arrives during a sync waits for the next one, since its commit may
/// have been written after that sync began.
///
/// After one failed sync every later one fails too, until the process restarts: the kernel may
/// have dropped the WAL pages that failed to reach the disk and report the next sync as a
/// success, although the WAL, whose frames are chained by checksums, is no longer whole on disk
/// beyond them. Publishing stops (each write answers an error, so no platform call is made on
/// its strength) rather than going on with records a power cut would lose.
fn run(wal: &Path, incoming: &mpsc::Receiver<Waiter>, syncs: &AtomicU64) {
    let mut directory_synced = false;
    let mut failed: Option<String> = None;
    while let Ok(first) = incoming.recv() {
        let mut waiting = vec![first];
        waiting.extend(incoming.try_iter());
        let result = match &failed {
            Some(error) => Err(format!(
                "{error} (an earlier sync failed; restart the service)"
            )),
            None => sync(wal, &mut directory_synced),
        };
        match &result {
            Ok(()) => {
                syncs.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                tracing::error!(%error, wal = %wal.display(), "WAL sync failed");
                failed.get_or_insert_with(|| error.clone());
            }
        }
        for waiter in waiting {
            let _ = waiter.send(result.clone());
        }
    }
}

/// `fdatasync` of the WAL. A sync flushes the file's data whichever descriptor asks, so a
/// descriptor of our own serves. The first time, the directory too, so that the WAL's own
/// entry survives a power cut after it was created.
fn sync(wal: &Path, directory_synced: &mut bool) -> Result<(), String> {
    File::open(wal)
        .and_then(|file| file.sync_data())
        .map_err(|e| e.to_string())?;
    if !*directory_synced {
        let directory = wal
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        File::open(directory)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| e.to_string())?;
        *directory_synced = true;
    }
    Ok(())
}
