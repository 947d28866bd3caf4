//! The operator's view of the actors: every account actor's health and the background actors'
//! status (`GET /api/admin/actors` and the dashboard's operator page).

use serde::{Deserialize, Serialize};

use super::{
    BackgroundActors,
    collector::{CollectorStatus, GetCollectorStatus},
    reconciler::{self, ReconcilerStatus},
    scheduler::{GetStatus, SchedulerStatus},
    token_keeper::{GetTokenKeeperStatus, TokenKeeperStatus},
};
use crate::{
    actors::{account::ActorHealth, supervisor::Supervisor},
    cluster::{Cluster, ClusterView},
    error::ApiError,
};

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActorsQuery {
    /// Only this platform's actors.
    pub platform: Option<String>,
    /// Only actors in this state: `idle`, `publishing`, `backing_off` or `token_invalid`.
    pub state: Option<String>,
}

// Serialized in one pass (no intermediate JSON tree: it may hold 10,000 actors).
/// `GET /api/admin/actors`: the account actors and the background actors' status; a
/// background actor that is not enabled is `null`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ActorsView {
    success: bool,
    pub count: usize,
    pub actors: Vec<ActorHealth>,
    #[schema(required = true)]
    pub scheduler: Option<SchedulerStatus>,
    #[schema(required = true)]
    pub collector: Option<CollectorStatus>,
    #[schema(required = true)]
    pub reconciler: Option<ReconcilerStatus>,
    #[schema(required = true)]
    pub token_keeper: Option<TokenKeeperStatus>,
    /// The instances sharing the database, this one among them.
    pub cluster: ClusterView,
}

/// The actor view's states, in the order filters offer them.
pub const STATES: [&str; 4] = ["idle", "publishing", "backing_off", "token_invalid"];

/// The data of `GET /api/admin/actors` (also the dashboard's operator page).
pub async fn view(
    supervisor: &Supervisor,
    background: &BackgroundActors,
    cluster: &Cluster,
    query: &ActorsQuery,
) -> Result<ActorsView, ApiError> {
    let wanted_state = query.state.as_deref().filter(|s| !s.is_empty());
    if let Some(s) = wanted_state
        && !STATES.contains(&s)
    {
        return Err(ApiError::invalid_request(format!(
            "state must be one of {}",
            STATES.join(", ")
        )));
    }
    let platform = query.platform.as_deref().filter(|p| !p.is_empty());
    let mut actors: Vec<ActorHealth> = supervisor
        .all_health()
        .into_iter()
        .filter(|a| platform.is_none_or(|p| a.platform.as_str() == p))
        .filter(|a| wanted_state.is_none_or(|s| a.state.as_str() == s))
        .collect();
    actors.sort_unstable_by(|a, b| {
        (a.platform.as_str(), &a.name, a.account_id).cmp(&(
            b.platform.as_str(),
            &b.name,
            b.account_id,
        ))
    });
    let scheduler = match background.scheduler() {
        Some(addr) => addr.send(GetStatus).await.ok(),
        None => None,
    };
    let reconciler = match background.reconciler() {
        Some(addr) => addr.send(reconciler::GetStatus).await.ok(),
        None => None,
    };
    let collector = match background.collector() {
        Some(addr) => addr.send(GetCollectorStatus).await.ok(),
        None => None,
    };
    let token_keeper = match background.token_keeper() {
        Some(addr) => addr.send(GetTokenKeeperStatus).await.ok(),
        None => None,
    };
    Ok(ActorsView {
        success: true,
        count: actors.len(),
        actors,
        scheduler,
        collector,
        reconciler,
        token_keeper,
        cluster: cluster.view().await?,
    })
}
