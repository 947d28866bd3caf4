//! The dashboard's string catalogue: every UI string, in English and Traditional Chinese.
//!
//! One enum variant per string, so a template cannot ask for a string that does not exist and
//! adding a variant forces both translations (the macro takes exactly two per key). Strings with
//! values to fill in use `{name}` placeholders, filled by [`T::fill`].

use chrono::{DateTime, Utc};

use crate::usage::Locale;

macro_rules! catalogue {
    ($($key:ident => $en:literal, $zh:literal;)*) => {
        /// A UI string's key.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Msg { $($key),* }

        impl Msg {
            /// Every key (for the completeness test).
            #[cfg(test)]
            const ALL: &'static [Msg] = &[$(Msg::$key),*];

            fn en(self) -> &'static str {
                match self { $(Msg::$key => $en),* }
            }

            fn zh_tw(self) -> &'static str {
                match self { $(Msg::$key => $zh),* }
            }
        }
    };
}

catalogue! {
    AppName => "Social Publishing", "社群發布服務";
    SkipToContent => "Skip to content", "跳到主要內容";
    NavLabel => "Main", "主選單";
    NavOverview => "Overview", "總覽";
    NavAccounts => "Accounts", "帳號";
    NavKeys => "API keys", "API 金鑰";
    SignedInAs => "Signed in as", "已登入：";
    SignOut => "Sign out", "登出";
    LanguageLabel => "Language", "語言";
    SignInTitle => "Sign in", "登入";
    ErrorTitle => "That did not work", "無法完成這個動作";
    ErrorTitleNotFound => "Page not found", "找不到這個頁面";
    ErrorTitleServer => "Something went wrong on our side", "服務發生錯誤";
    ErrorBack => "Back to the overview", "回到總覽";
    SignInLead => "Sign in with your identity provider account to manage your connected accounts and API keys.", "使用身分提供者帳號登入，以管理已連結的帳號與 API 金鑰。";
    SignInButton => "Sign in", "登入";
    OverviewTitle => "Overview", "總覽";
    PlanHeading => "Plan", "方案";
    PlanFree => "Free", "免費方案";
    PlanPro => "Pro", "專業方案";
    PlanUltra => "Ultra (Pro and X)", "旗艦方案（專業方案加上 X）";
    UsageHeading => "Usage this period", "本期用量";
    UsageLimited => "{used} of {limit} calls used, {remaining} left", "已使用 {used} / {limit} 次呼叫，剩餘 {remaining} 次";
    UsageUnlimited => "{used} calls, no limit", "{used} 次呼叫，無上限";
    UsageResets => "Resets on", "重設日期";
    AccountsHeading => "Connected accounts", "已連結的帳號";
    AccountsEmpty => "No account is connected yet. Connect one on the Accounts page to start publishing.", "尚未連結任何帳號。請到「帳號」頁面連結一個帳號，即可開始發布。";
    GoToAccounts => "Go to Accounts", "前往帳號頁面";
    ScheduledHeading => "Next scheduled posts", "即將發布的排程貼文";
    ScheduledEmpty => "Nothing is scheduled. Pick a date and time on Compose to schedule a post (API clients send scheduledAt to POST /v2/posts).", "目前沒有排程。在撰寫頁面選擇日期與時間即可排程貼文（API 用戶端可在 POST /v2/posts 加上 scheduledAt）。";
    ResultsHeading => "Latest results", "最近的發布結果";
    ResultsEmpty => "Nothing has been published yet. Write your first post on Compose, or send it to POST /v2/posts with an API key.", "尚未發布任何貼文。在撰寫頁面寫下第一則貼文，或用 API 金鑰呼叫 POST /v2/posts。";
    GoToKeys => "Go to API keys", "前往 API 金鑰頁面";
    ColName => "Name", "名稱";
    ColPlatform => "Platform", "平台";
    ColStatus => "Status", "狀態";
    ColExpiry => "Token expiry", "權杖到期";
    ColDataAccess => "Data access until", "資料存取期限";
    ColWhen => "When", "時間";
    ColText => "Text", "內容";
    ColResult => "Result", "結果";
    ColPreview => "Key", "金鑰";
    ColCreated => "Created", "建立時間";
    ColLastUsed => "Last used", "上次使用";
    ColActions => "Actions", "操作";
    Valid => "Valid", "有效";
    Invalid => "Needs reconnecting", "需要重新連結";
    NoExpiry => "Does not expire", "不會到期";
    Expired => "expired", "已過期";
    DaysLeft => "{days} days left", "剩 {days} 天";
    DayLeft => "1 day left", "剩 1 天";
    LessThanADayLeft => "less than a day left", "剩不到 1 天";
    InvalidReason => "Reason", "原因";
    CheckToken => "Check token", "檢查權杖";
    Disconnect => "Disconnect", "中斷連結";
    AccountsTitle => "Accounts", "帳號";
    ConnectHeading => "Connect an account", "連結帳號";
    ConnectPlatform => "Connect {platform}", "連結 {platform}";
    ConnectInstagramViaFacebook => "Connect Instagram (through a Facebook page)", "連結 Instagram（透過 Facebook 粉絲專頁）";
    ConnectInstagramDirect => "Connect Instagram (Instagram Login, no Facebook page)", "連結 Instagram（Instagram 登入，不需 Facebook 粉絲專頁）";
    NoticeConnected => "Connected {count} {platform} account(s).", "已連結 {count} 個 {platform} 帳號。";
    NoticeDisconnected => "The account was disconnected.", "已中斷該帳號的連結。";
    NoticeAccountMissing => "That account is not connected (any more).", "該帳號未連結（或已中斷連結）。";
    ErrorConnectState => "This connection link is unknown, expired, already used or was started in another session. Start the connection again.", "此連結無效、已過期、已使用過，或是在其他工作階段開始的。請重新開始連結。";
    ErrorConnectRefused => "The platform did not complete the connection. Try again, and allow the requested permissions.", "平台未完成連結。請再試一次，並允許所要求的權限。";
    ErrorConnectUnavailable => "The platform could not be reached. Try connecting again in a moment.", "無法連上平台。請稍後再試。";
    ErrorConnectOther => "The connection did not complete. Start it again from this page.", "連結未完成。請從此頁面重新開始。";
    DisconnectTitle => "Disconnect this account?", "要中斷此帳號的連結嗎？";
    DisconnectText => "Posts can no longer be published to {name} ({platform}), and its scheduled posts will fail. You can connect it again later.", "之後將無法發布貼文到 {name}（{platform}），其排程貼文也會失敗。您之後可以重新連結。";
    DisconnectConfirm => "Yes, disconnect", "是，中斷連結";
    Cancel => "Cancel", "取消";
    TokenTitle => "Token of {name}", "{name} 的權杖";
    TokenValid => "Token valid", "權杖有效";
    TokenExpiresAt => "Expires", "到期時間";
    TokenDataAccessExpired => "Data access has expired: reconnect the account to renew it.", "資料存取已過期：請重新連結帳號以更新。";
    Yes => "Yes", "是";
    No => "No", "否";
    BackToAccounts => "Back to Accounts", "返回帳號頁面";
    KeysTitle => "API keys", "API 金鑰";
    KeyCreateHeading => "Create a key", "建立金鑰";
    KeyNameLabel => "Name (what the key is for)", "名稱（金鑰的用途）";
    KeyCreateButton => "Create key", "建立金鑰";
    KeyCreatedTitle => "Your new key \"{name}\"", "您的新金鑰「{name}」";
    KeyOnceWarning => "Copy this key now and keep it somewhere safe. It will not be shown again: if you lose it, delete it and create a new one.", "請立即複製此金鑰並妥善保存。它不會再次顯示：如果遺失，請刪除後重新建立。";
    KeyValueLabel => "Your API key", "您的 API 金鑰";
    KeyCopy => "Copy", "複製";
    KeyCopied => "Copied", "已複製";
    KeysHeading => "Your keys", "您的金鑰";
    KeysEmpty => "You have no API key yet. Create one above to call the API.", "您還沒有 API 金鑰。請在上方建立一個以呼叫 API。";
    NeverUsed => "Never used", "從未使用";
    Delete => "Delete", "刪除";
    KeyDeleteTitle => "Delete the key \"{name}\"?", "要刪除金鑰「{name}」嗎？";
    KeyDeleteText => "Programs using this key ({preview}) will be refused at once. This cannot be undone.", "使用此金鑰（{preview}）的程式將立即被拒絕。此操作無法復原。";
    KeyDeleteConfirm => "Yes, delete", "是，刪除";
    NoticeKeyDeleted => "The key was deleted.", "已刪除該金鑰。";
    NoticeKeyMissing => "That key does not exist (any more).", "該金鑰不存在（或已刪除）。";
    ErrorKeyNameEmpty => "Give the key a name.", "請為金鑰命名。";
    ErrorKeyNameTooLong => "The name may have at most {max} characters.", "名稱最多 {max} 個字元。";
    ErrorKeyNameNul => "The name contains a character that cannot be stored.", "名稱包含無法儲存的字元。";
    ErrorTooManyKeys => "You may hold at most {max} keys. Delete one first.", "最多只能有 {max} 個金鑰。請先刪除一個。";
    JustNow => "just now", "剛剛";
    InFuture => "in {span}", "{span}後";
    InPast => "{span} ago", "{span}前";
    SpanMinutes => "{n} min", "{n} 分鐘";
    SpanHours => "{n} h", "{n} 小時";
    SpanDays => "{n} days", "{n} 天";
    StatusScheduled => "scheduled", "已排程";
    StatusPublishing => "publishing", "發布中";
    StatusPublished => "published", "已發布";
    StatusFailed => "failed", "失敗";
    StatusCancelled => "cancelled", "已取消";
    StatusUnconfirmed => "unconfirmed", "未確認";
    StatusProcessing => "processing", "處理中";
    // Compose and Scheduled pages.
    NavCompose => "Compose", "撰寫";
    NavScheduled => "Scheduled", "排程";
    ComposeTitle => "Compose", "撰寫貼文";
    ComposeLead => "Publish now or schedule a post to one of your accounts. It goes through the same checks and counts against the same monthly allowance as POST /v2/posts.", "立即發布或排程一則貼文到您的帳號。它會經過與 POST /v2/posts 相同的檢查，並計入相同的每月用量。";
    ComposeNoAccounts => "No account can be published to: connect one (or reconnect one that needs it) on the Accounts page first.", "目前沒有可發布的帳號：請先到「帳號」頁面連結帳號（或重新連結需要重新連結的帳號）。";
    ComposeAccount => "Account", "帳號";
    ComposeText => "Text", "內容";
    ComposeTextHint => "For Threads and X, a line holding only {separator} starts the next post of a thread.", "在 Threads 與 X，只有 {separator} 的一行會開始串文的下一則貼文。";
    ComposeMedia => "Media URLs (one per line)", "媒體網址（每行一個）";
    ComposeMediaHint => "Public HTTPS addresses of the files themselves (JPG, PNG, WEBP, MP4, MOV). For YouTube, the video first, then an optional thumbnail.", "檔案本身的公開 HTTPS 網址（JPG、PNG、WEBP、MP4、MOV）。YouTube 請先放影片，再放選用的縮圖。";
    ComposeOptions => "Platform options", "平台選項";
    ComposeCover => "Instagram reel cover (image URL)", "Instagram Reels 封面（圖片網址）";
    ComposeDraft => "TikTok: send to the TikTok inbox as a draft", "TikTok：以草稿傳送到 TikTok 收件匣";
    ComposeYtTitle => "YouTube title", "YouTube 標題";
    ComposeYtDescription => "YouTube description", "YouTube 說明";
    ComposeSchedule => "Schedule (leave empty to publish now)", "排程（留空則立即發布）";
    ComposeScheduleAt => "Date and time", "日期與時間";
    ComposeZone => "Time zone", "時區";
    ComposeSubmit => "Publish or schedule", "發布或排程";
    ComposeErrorCode => "Error code", "錯誤代碼";
    ComposePublished => "Published to {platform}.", "已發布到 {platform}。";
    ComposePostId => "Post id", "貼文 ID";
    ComposeSubmissionId => "Submission id", "提交 ID";
    ComposeOpenPost => "Open the post on the platform", "在平台上開啟貼文";
    ComposeScheduled => "Scheduled.", "已排程。";
    ComposeScheduledId => "Scheduled post id", "排程貼文 ID";
    ComposeScheduledFor => "Scheduled for", "排程時間";
    ComposeSeeScheduled => "See the scheduled posts", "查看排程貼文";
    ComposeUnconfirmed => "Unconfirmed: the platform may or may not have published this post. Check the platform (or the history) before sending it again.", "未確認：平台可能已發布、也可能未發布這則貼文。再次傳送前請先到平台（或發布紀錄）確認。";
    ComposeFailed => "Not published.", "未發布。";
    ComposeAlreadySubmitted => "This form was already submitted, so nothing was sent again. What the first submission did is in History.", "這份表單已經送出過，因此沒有再次傳送。第一次送出的結果請見發布紀錄。";
    ComposeSeeHistory => "See the history", "查看發布紀錄";
    ComposeUploadLabel => "Upload media files", "上傳媒體檔案";
    ComposeUploadHint => "JPG, PNG, WEBP, MP4 or MOV, up to {size} each. The address of each uploaded file is added to Media URLs below.", "JPG、PNG、WEBP、MP4 或 MOV，每個檔案最大 {size}。上傳後，檔案的網址會加入下方的媒體網址。";
    ComposeUploadButton => "Upload", "上傳";
    ComposeUploadDrop => "Or drop files here", "或將檔案拖放到這裡";
    ComposeUploading => "Uploading: {percent}%", "上傳中：{percent}%";
    ComposeUploaded => "Uploaded", "已上傳";
    ComposeUploadFailed => "Not uploaded", "未上傳";
    ComposeUploadLost => "The upload did not reach the service. Check the connection and try again.", "上傳未能送達服務。請檢查網路連線後再試一次。";
    ComposeUploadRemove => "Remove", "移除";
    ComposeUploadRemoveNamed => "Remove {name}", "移除 {name}";
    ComposeUploadNoFile => "Choose a file to upload.", "請選擇要上傳的檔案。";
    NoticeUploaded => "Uploaded {count} file(s). Their addresses are in Media URLs.", "已上傳 {count} 個檔案。檔案網址已加入媒體網址。";
    ScheduledTitle => "Scheduled posts", "排程貼文";
    ScheduledFilterStatus => "Status", "狀態";
    ScheduledFilterPlatform => "Platform", "平台";
    ScheduledFilterAll => "All", "全部";
    ScheduledFilterApply => "Show", "顯示";
    ScheduledEmptyAll => "Nothing is scheduled yet. Write a post on the Compose page and give it a date and time.", "目前沒有排程。請到「撰寫」頁面寫一則貼文並設定日期與時間。";
    ScheduledEmptyFiltered => "No scheduled post matches these filters. Choose \"All\" to see every one.", "沒有符合篩選條件的排程貼文。選擇「全部」即可查看所有貼文。";
    GoToCompose => "Go to Compose", "前往撰寫頁面";
    ScheduledCapped => "Showing the first {n} posts (earliest first). Filter by status or platform to see the others.", "僅顯示最早的 {n} 則。請依狀態或平台篩選以查看其他貼文。";
    ColLocalTime => "Time ({zone})", "時間（{zone}）";
    ColUtc => "UTC", "UTC";
    ColMedia => "Media", "媒體";
    ScheduledCancelTitle => "Cancel this scheduled post?", "要取消這則排程貼文嗎？";
    ScheduledCancelText => "The post to {name} ({platform}) planned for {local} ({utc}) will not be published. This cannot be undone.", "原定於 {local}（{utc}）發布到 {name}（{platform}）的貼文將不會發布。此操作無法復原。";
    ScheduledCancelConfirm => "Yes, cancel the post", "是，取消貼文";
    ScheduledKeep => "Keep it", "保留";
    NoticeScheduledCancelled => "The scheduled post was cancelled.", "已取消該排程貼文。";
    NoticeScheduledMissing => "That scheduled post does not exist.", "該排程貼文不存在。";
    NoticeScheduledNotCancellable => "That post can no longer be cancelled: only posts still waiting (status scheduled) can be.", "該貼文已無法取消：只有仍在等待中（狀態為已排程）的貼文可以取消。";
    // History and the delivery timeline (page "history").
    NavHistory => "History", "發布紀錄";
    HistoryTitle => "History", "發布紀錄";
    HistoryPosition => "Page {page} of {pages} ({total} posts)", "第 {page} 頁，共 {pages} 頁（{total} 則貼文）";
    HistoryTimelineLink => "Delivery timeline", "傳送時間軸";
    PagerLabel => "Pages", "分頁";
    PagerPrev => "Newer", "較新";
    PagerNext => "Older", "較舊";
    BackToHistory => "Back to History", "返回發布紀錄";
    ColPostType => "Post type", "貼文類型";
    TimelineTitle => "Delivery to {account} ({platform})", "傳送到 {account}（{platform}）";
    TimelineHeading => "Delivery timeline", "傳送時間軸";
    TimelineWhy => "Why it did not publish", "未能發布的原因";
    TimelineErrorCode => "Error code", "錯誤代碼";
    TimelinePlatformWords => "What the platform said", "平台的回應";
    TimelineChecking => "The outcome is not known yet: the service is still checking on the platform whether the post went out. Do not send it again before this page says so.", "結果尚未確定：服務仍在向平台確認貼文是否已發出。在此頁面顯示結果之前，請勿重新發送。";
    NoticePostMissing => "That publish does not exist in your history. Pick one from the list.", "您的發布紀錄中沒有那筆資料。請從清單中選擇一筆。";
    StepStarted => "Publish started", "開始發布";
    StepContainer => "Media container created", "已建立媒體容器";
    StepProcessingFinished => "Platform processing finished (status polled)", "平台處理完成（已輪詢狀態）";
    StepProcessingFailed => "Platform processing failed (status polled)", "平台處理失敗（已輪詢狀態）";
    StepProcessingPending => "Still processing at our deadline; checked again later", "在期限內仍在處理中，稍後會再確認";
    StepChild => "Carousel item created", "已建立輪播項目";
    StepMedia => "Media uploaded", "已上傳媒體";
    StepPhoto => "Photo uploaded", "已上傳相片";
    StepVideo => "Video uploaded", "已上傳影片";
    StepPost => "Post published", "已發布貼文";
    StepPublishId => "Publish request accepted", "已接受發布請求";
    StepUploadSession => "Upload session opened", "已開啟上傳工作階段";
    StepFinal => "Final publish call made", "已送出最終發布呼叫";
    StepPublished => "Published", "已發布";
    StepFailed => "Failed", "失敗";
    StepUnconfirmed => "Outcome unknown (may have been published)", "結果不明（可能已發布）";
    StepPublishing => "Still publishing", "仍在發布中";
    StepNoTime => "time not recorded", "未記錄時間";
    NavPerformance => "Performance", "成效";
    PerfTitle => "Performance", "成效";
    // Operator pages.
    NavOperator => "Operator", "營運";
    OpTitle => "Operator", "營運";
    OpRefused => "This page is for operators. Ask an operator to grant you the role if you need it.", "此頁面僅供營運人員使用。如有需要，請洽營運人員授予權限。";
    OpActorsHeading => "Account actors", "帳號執行者";
    OpActorsCount => "{count} actor(s)", "共 {count} 個執行者";
    OpActorsLiveOnly => "An account's actor starts on its first request and stops when idle; accounts without a live actor are not listed.", "帳號的執行者在第一次請求時啟動、閒置後停止；沒有執行中執行者的帳號不會列出。";
    OpActorsEmpty => "No account actor matches. Actors start when accounts are connected; clear the filters to see them all.", "沒有符合的帳號執行者。帳號連結後就會啟動執行者；清除篩選條件即可看到全部。";
    OpFilterPlatform => "Platform", "平台";
    OpFilterState => "State", "狀態";
    OpFilterAny => "Any", "全部";
    OpFilterApply => "Filter", "篩選";
    OpRefresh => "Refresh", "重新整理";
    OpAutoRefresh => "Refreshes every 5 seconds while this tab is visible.", "此分頁顯示時每 5 秒自動更新。";
    OpColAccount => "Account id", "帳號 ID";
    OpColState => "State", "狀態";
    OpColQueue => "Queue", "佇列";
    OpColInFlight => "In flight for", "處理中時間";
    OpColLimiter => "Limiter", "速率限制";
    OpColToken => "Token", "權杖";
    OpColCounts => "Published / failed", "已發布 / 失敗";
    OpColLastError => "Last error", "最近的錯誤";
    OpLimiter => "{remaining} of {capacity} {unit} left (full in {full} s)", "剩餘 {remaining} / {capacity} {unit}（{full} 秒後補滿）";
    OpTokenValid => "valid", "有效";
    OpTokenInvalid => "invalid", "無效";
    OpExpires => "expires", "到期";
    OpScheduler => "Scheduler", "排程器";
    OpCollector => "Collector", "數據收集器";
    OpReconciler => "Unconfirmed publishes", "未確認的發布";
    OpNotRunning => "Not running in this instance.", "此執行個體未執行。";
    OpRunning => "Running", "執行中";
    OpDraining => "Draining", "停止中";
    OpInFlight => "In flight", "處理中";
    OpNextDue => "Next due", "下一個到期";
    OpLastLag => "Latest start delay", "最近一次的啟動延遲";
    OpPublished => "Published", "已發布";
    OpFailed => "Failed", "失敗";
    OpRetried => "Retried", "已重試";
    OpSettled => "Settled", "已結算";
    OpLastError => "Last error", "最近的錯誤";
    OpNextRun => "Next run", "下次執行";
    OpTarget => "Collecting for", "收集日期";
    OpLastRun => "Last run", "上次執行";
    OpRunSummary => "{date}: {ok} ok, {failed} failed, {skipped} skipped of {total}", "{date}：{total} 個中成功 {ok}、失敗 {failed}、略過 {skipped}";
    OpPasses => "Passes", "檢查次數";
    OpStillProcessing => "Still processing", "仍在處理中";
    OpGaveUp => "Gave up", "已放棄";
    OpYes => "yes", "是";
    OpNo => "no", "否";
    OpNone => "—", "—";
    OpUsersHeading => "Users and plans", "使用者與方案";
    OpUsersEmpty => "No user has signed in yet. Users appear here after their first sign-in.", "尚無使用者登入。使用者首次登入後會顯示在這裡。";
    OpColEmail => "E-mail", "電子郵件";
    OpColPlan => "Plan", "方案";
    OpColUsage => "Usage this period", "本期用量";
    OpPlanLabel => "New plan for {who}", "{who} 的新方案";
    OpPlanTypeLabel => "Billing for {who}", "{who} 的計費週期";
    OpMonthly => "monthly", "月繳";
    OpAnnual => "annual", "年繳";
    OpChangePlan => "Change plan", "變更方案";
    OpPlanChanged => "The plan was changed.", "已變更方案。";
    OpPlanInvalid => "That plan or billing period does not exist.", "沒有這個方案或計費週期。";
    OpUserMissing => "That user no longer exists.", "此使用者已不存在。";
    // Webhooks page, delivery log and the operator's webhook panel.
    NavWebhooks => "Webhooks", "Webhook";
    WebhooksTitle => "Webhooks", "Webhook";
    WebhooksLead => "Each endpoint gets a signed message (Standard Webhooks) when one of its events happens: a post published, failed or unconfirmed, an account's token about to expire or no longer valid. A failed delivery is retried on a schedule, and any message can be replayed from its delivery log.", "發生端點所訂閱的事件時（貼文已發布、失敗或未確認，帳號權杖即將到期或已失效），服務會傳送一則簽章訊息（Standard Webhooks）到該端點。傳送失敗會依排程重試，每則訊息都可以從傳送紀錄重新傳送。";
    WebhookCreateHeading => "Add an endpoint", "新增端點";
    WebhookUrlLabel => "URL", "網址";
    WebhookUrlHint => "Where the messages are POSTed: a public https address.", "接收訊息（POST）的位置：公開的 https 網址。";
    WebhookEventsLegend => "Events", "事件";
    WebhookEventsHint => "With no box checked, the endpoint gets every event.", "全部不勾選時，端點會收到所有事件。";
    WebhookDescriptionLabel => "Description (optional)", "說明（選填）";
    WebhookCreateButton => "Add endpoint", "新增端點";
    WebhookCreatedTitle => "Endpoint added: {url}", "已新增端點：{url}";
    WebhookSecretOnce => "Copy this signing secret now and keep it with your receiver: it proves that a message comes from this service. It will not be shown again; if you lose it, rotate it.", "請立即複製此簽章密鑰並交給您的接收端保存：它用來證明訊息來自本服務。它不會再次顯示；如果遺失，請更換密鑰。";
    WebhookSecretLabel => "Signing secret", "簽章密鑰";
    WebhookRotatedTitle => "New signing secret for {url}", "{url} 的新簽章密鑰";
    WebhookRotatedUntil => "Until {until}, messages carry two signatures, one with this secret and one with the previous one; after that, only this one signs. Give it to your receiver before then.", "在 {until} 之前，訊息會帶有兩個簽章：一個使用此密鑰，一個使用先前的密鑰；之後只有此密鑰會簽章。請在那之前將它交給您的接收端。";
    WebhooksHeading => "Your endpoints", "您的端點";
    WebhooksEmpty => "You have no webhook endpoint yet. Add one above to be told when your posts are published or fail.", "您還沒有 Webhook 端點。請在上方新增一個，以便在貼文發布或失敗時收到通知。";
    ColUrl => "URL", "網址";
    ColEvents => "Events", "事件";
    ColDescription => "Description", "說明";
    WebhookActive => "active", "啟用中";
    WebhookDisabled => "disabled", "已停用";
    WebhookSendTest => "Send test", "傳送測試";
    WebhookRotate => "Rotate secret", "更換密鑰";
    WebhookDisable => "Disable", "停用";
    WebhookEnable => "Enable", "啟用";
    WebhookLogLink => "Delivery log", "傳送紀錄";
    WebhookDeleteTitle => "Delete this endpoint?", "要刪除此端點嗎？";
    WebhookDeleteText => "{url} will get no more messages, and its delivery log is deleted with it. This cannot be undone.", "{url} 將不再收到任何訊息，其傳送紀錄也會一併刪除。此操作無法復原。";
    WebhookDeleteConfirm => "Yes, delete", "是，刪除";
    NoticeWebhookTestQueued => "A test message was queued. Its delivery appears in the endpoint's delivery log.", "已排入一則測試訊息。傳送結果會顯示在該端點的傳送紀錄中。";
    NoticeWebhookEnabled => "The endpoint was enabled: it gets events again.", "已啟用該端點：它會再次收到事件。";
    NoticeWebhookDisabled => "The endpoint was disabled: it gets no events until it is enabled again.", "已停用該端點：重新啟用之前不會收到任何事件。";
    NoticeWebhookDeleted => "The endpoint was deleted.", "已刪除該端點。";
    NoticeWebhookMissing => "That endpoint does not exist (any more).", "該端點不存在（或已刪除）。";
    NoticeFormAlreadySent => "This form was already submitted, so nothing was done again.", "這份表單已經送出過，因此沒有再次執行。";
    WebhookCreateAlreadySent => "This form was already submitted, so no second endpoint was added. The endpoint is in the list below; if its secret was not shown to you, rotate it.", "這份表單已經送出過，因此沒有再新增端點。該端點列在下方；如果您沒有看到它的密鑰，請更換密鑰。";
    ErrorFormExpired => "This form has expired, so nothing was done. Try again on this page.", "這份表單已過期，因此沒有執行任何動作。請在此頁面重試。";
    ErrorWebhookRefused => "The endpoint was not added.", "未新增端點。";
    WebhookLogTitle => "Delivery log", "傳送紀錄";
    WebhookLogPosition => "Page {page} of {pages} ({total} messages)", "第 {page} 頁，共 {pages} 頁（{total} 則訊息）";
    WebhookLogEmpty => "No message has been sent to this endpoint yet. Send a test from the Webhooks page to see one here.", "尚未傳送任何訊息到此端點。在 Webhook 頁面傳送測試，即可在這裡看到。";
    WebhookMessageId => "Message id", "訊息 ID";
    ColEvent => "Event", "事件";
    ColNextAttempt => "Next attempt", "下次嘗試";
    WebhookAttemptsHeading => "Attempts", "嘗試紀錄";
    WebhookNoAttempts => "No attempt yet.", "尚未嘗試。";
    ColHttpStatus => "HTTP status", "HTTP 狀態";
    ColDuration => "Duration", "耗時";
    ColResponse => "Response", "回應";
    ColError => "Error", "錯誤";
    WebhookShowResponse => "Response (first 1 KB)", "回應（前 1 KB）";
    WebhookReplay => "Replay", "重新傳送";
    NoticeWebhookReplayed => "The message was queued again: it is sent now, with the same id and body.", "已重新排入該訊息：現在會以相同的 ID 與內容再次傳送。";
    NoticeWebhookMessageMissing => "That message is not in this endpoint's delivery log.", "此端點的傳送紀錄中沒有該訊息。";
    WebhookStatusPending => "pending", "待傳送";
    WebhookStatusDelivered => "delivered", "已送達";
    WebhookStatusFailed => "failed", "失敗";
    BackToWebhooks => "Back to Webhooks", "返回 Webhook 頁面";
    OpWebhooks => "Webhook deliveries", "Webhook 傳送";
    OpInstances => "Instances", "執行個體";
    OpInstancesNote => "Instances sharing this database. One silent for {secs} s is taken over: its accounts, scheduled posts, checks and webhook deliveries go to the others.", "共用此資料庫的執行個體。沉默超過 {secs} 秒者由其他執行個體接手其帳號、排程貼文、檢查與 Webhook 傳送。";
    OpInstancesSingle => "On SQLite one instance does all the work; several instances need PostgreSQL.", "使用 SQLite 時由單一執行個體處理所有工作；多個執行個體需使用 PostgreSQL。";
    OpColInstance => "Instance", "執行個體";
    OpColAddress => "Address", "位址";
    OpColStarted => "Started", "啟動時間";
    OpColHeartbeat => "Last heartbeat", "最近心跳";
    OpColLeases => "Account leases", "帳號租約";
    OpHeartbeatAgo => "{secs} s ago", "{secs} 秒前";
    OpLive => "live", "運作中";
    OpSilent => "silent", "沉默";
    OpThisInstance => "this instance", "此執行個體";
    OpQueueDepth => "Messages waiting", "等待傳送的訊息";
    OpOldestPending => "Oldest waiting message", "等待最久的訊息";
    OpEventsWaiting => "Events not yet turned into messages", "尚未轉成訊息的事件";
    OpFailingHeading => "Failing or disabled endpoints", "傳送失敗或已停用的端點";
    OpFailingEmpty => "No endpoint is failing or disabled.", "沒有傳送失敗或已停用的端點。";
    OpFailingCapped => "At most 50 are listed, the longest failing first.", "最多列出 50 個，失敗最久的排在前面。";
    OpColUser => "User", "使用者";
    OpColFailingSince => "Failing since", "開始失敗的時間";
    OpColDisabledReason => "Disabled because", "停用原因";
    PerfNoAccounts => "No account is connected yet, so there is nothing to measure. Connect one on the Accounts page; its numbers are collected every day.", "尚未連結任何帳號，因此沒有可顯示的數據。請到「帳號」頁面連結帳號，系統每天都會收集數據。";
    PerfAccountLabel => "Account", "帳號";
    PerfRangeLabel => "Range", "期間";
    PerfDays => "{days} days", "{days} 天";
    PerfShow => "Show", "顯示";
    PerfRange => "From {from} to {to} (collection days)", "從 {from} 到 {to}（收集日）";
    PerfMissingHeading => "Missing days", "缺少的日期";
    PerfNothingMissing => "Every day in this range has its snapshot.", "此期間的每一天都有快照。";
    PerfMissingCount => "{count} day(s) in this range have no snapshot. Backfill collects them again from the platform.", "此期間有 {count} 天沒有快照。「補收」會重新向平台收集這些日期的數據。";
    PerfBackfill => "Backfill", "補收";
    PerfBackfilled => "Backfilled {ok} of {total} day(s).", "已補收 {ok} / {total} 天。";
    PerfChartsHeading => "Daily snapshots", "每日快照";
    PerfGapsNote => "A break in a line is a day without a value (no snapshot, or the platform did not give that metric), not a zero.", "線條中斷表示該日沒有數值（沒有快照，或平台未提供該指標），而不是零。";
    PerfCoverage => "{n} of {days} days have a value", "{days} 天中有 {n} 天有數值";
    PerfPostsCount => "Posts", "貼文數";
    PerfPostViews => "Views of the day's posts", "當日貼文觀看次數";
    PerfMin => "min", "最小";
    PerfMax => "max", "最大";
    PerfPostsHeading => "Recent posts", "最近的貼文";
    PerfNoPosts => "This account has no posts yet. Publish one and its metrics appear here.", "此帳號尚無貼文。發布貼文後，其數據會顯示在這裡。";
    PerfColMetrics => "Metrics", "數據";
    PerfNotAvailable => "{platform} gives no performance metrics, so this account has no charts. Pick another account.", "{platform} 不提供成效數據，因此此帳號沒有圖表。請選擇其他帳號。";
    PerfPostsFailed => "The platform did not give the recent posts:", "平台未提供最近的貼文：";
}

/// The catalogue in one locale: what templates call (`t.s(Msg::…)`).
#[derive(Debug, Clone, Copy)]
pub struct T(pub Locale);

impl T {
    /// The string of `msg`.
    pub fn s(&self, msg: Msg) -> &'static str {
        match self.0 {
            Locale::En => msg.en(),
            Locale::ZhTw => msg.zh_tw(),
        }
    }

    /// The string of `msg` with each `{name}` replaced by its value.
    pub fn fill(&self, msg: Msg, values: &[(&str, &str)]) -> String {
        values
            .iter()
            .fold(self.s(msg).to_string(), |text, (name, value)| {
                text.replace(&format!("{{{name}}}"), value)
            })
    }

    /// The `lang` attribute of the page.
    pub fn lang(&self) -> &'static str {
        match self.0 {
            Locale::En => "en",
            Locale::ZhTw => "zh-TW",
        }
    }

    /// `at` relative to `now`, in words ("in 3 h", "2 days ago").
    pub fn relative(&self, at: DateTime<Utc>, now: DateTime<Utc>) -> String {
        let seconds = (at - now).num_seconds();
        let abs = seconds.unsigned_abs();
        if abs < 60 {
            return self.s(Msg::JustNow).to_string();
        }
        let span = if abs < 3600 {
            self.fill(Msg::SpanMinutes, &[("n", &(abs / 60).to_string())])
        } else if abs < 48 * 3600 {
            self.fill(Msg::SpanHours, &[("n", &(abs / 3600).to_string())])
        } else {
            // From 48 h on, so always two days or more; rounded to the nearest day, so a token
            // issued a moment ago for 60 days says 60, not 59.
            self.fill(Msg::SpanDays, &[("n", &nearest_days(abs).to_string())])
        };
        let direction = if seconds > 0 {
            Msg::InFuture
        } else {
            Msg::InPast
        };
        self.fill(direction, &[("span", &span)])
    }

    /// A status value of the spec (scheduled post or history item), in words; an unknown one
    /// is shown as it is.
    pub fn status(&self, status: &str) -> String {
        let msg = match status {
            "scheduled" => Msg::StatusScheduled,
            "publishing" => Msg::StatusPublishing,
            "published" => Msg::StatusPublished,
            "failed" => Msg::StatusFailed,
            "cancelled" => Msg::StatusCancelled,
            "unconfirmed" => Msg::StatusUnconfirmed,
            "processing" => Msg::StatusProcessing,
            other => return other.to_string(),
        };
        self.s(msg).to_string()
    }
}

/// Whole days in `seconds`, rounded to the nearest.
pub fn nearest_days(seconds: u64) -> u64 {
    (seconds + 43_200) / 86_400
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;

    #[test]
    fn every_key_has_both_languages_with_the_same_placeholders() {
        let placeholders = |text: &str| {
            let mut names: Vec<String> = text
                .split('{')
                .skip(1)
                .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_string()))
                .collect();
            names.sort();
            names
        };
        for &msg in Msg::ALL {
            assert!(!msg.en().is_empty(), "{msg:?} en");
            assert!(!msg.zh_tw().is_empty(), "{msg:?} zh-TW");
            assert_eq!(placeholders(msg.en()), placeholders(msg.zh_tw()), "{msg:?}");
        }
    }

    #[test]
    fn relative_times() {
        let now = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
        let en = T(Locale::En);
        let zh = T(Locale::ZhTw);
        let cases = [
            ("seconds away", Duration::seconds(30), "just now", "剛剛"),
            (
                "minutes ahead",
                Duration::minutes(5),
                "in 5 min",
                "5 分鐘後",
            ),
            ("hours ahead", Duration::hours(3), "in 3 h", "3 小時後"),
            (
                "one day and a bit",
                Duration::hours(47),
                "in 47 h",
                "47 小時後",
            ),
            ("days ago", Duration::days(-2), "2 days ago", "2 天前"),
            (
                "sixty days less a moment",
                Duration::days(60) - Duration::milliseconds(5),
                "in 60 days",
                "60 天後",
            ),
            ("minutes ago", Duration::minutes(-90), "1 h ago", "1 小時前"),
        ];
        for (name, delta, want_en, want_zh) in cases {
            assert_eq!(en.relative(now + delta, now), want_en, "{name}");
            assert_eq!(zh.relative(now + delta, now), want_zh, "{name}");
        }
    }
}
