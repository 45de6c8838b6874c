package sqlite

import _ "embed" // the queries are sql/*.sql, one per variable

// The queries, each in its own file so that it reads (and diffs) as SQL.
// Parameters are named (:id) and bound with sql.Named, or positional (?).

//go:embed sql/claim_candidates.sql
var claimCandidatesSQL string

//go:embed sql/flow_settings.sql
var flowSettingsSQL string

//go:embed sql/flow_running.sql
var flowRunningSQL string

//go:embed sql/flow_partitions.sql
var flowPartitionsSQL string

//go:embed sql/flow_rate_queue.sql
var flowRateQueueSQL string

//go:embed sql/flow_rate_partitions.sql
var flowRatePartitionsSQL string

//go:embed sql/flow_throttle_queues.sql
var flowThrottleQueuesSQL string

//go:embed sql/flow_throttle_partitions.sql
var flowThrottlePartitionsSQL string

//go:embed sql/queue_set_limits.sql
var queueSetLimitsSQL string

//go:embed sql/queue_set_throttle_by.sql
var queueSetThrottleBySQL string

//go:embed sql/queue_clear_partitions.sql
var queueClearPartitionsSQL string

//go:embed sql/queue_throttles.sql
var queueThrottlesSQL string

//go:embed sql/prune_partitions.sql
var prunePartitionsSQL string

//go:embed sql/queue_health.sql
var queueHealthSQL string

//go:embed sql/queue_depth.sql
var queueDepthSQL string

//go:embed sql/queue_throughput.sql
var queueThroughputSQL string

//go:embed sql/batch_prepare.sql
var batchPrepareSQL string

//go:embed sql/batch_load.sql
var batchLoadSQL string

//go:embed sql/claim_jobs.sql
var claimJobsSQL string

//go:embed sql/finish_succeeded_batch.sql
var finishSucceededBatchSQL string

//go:embed sql/job_active_twin.sql
var jobActiveTwinSQL string

//go:embed sql/job_by_idempotency_key.sql
var jobByIdempotencyKeySQL string

//go:embed sql/job_count.sql
var jobCountSQL string

//go:embed sql/job_count_feed.sql
var jobCountFeedSQL string

//go:embed sql/job_events.sql
var jobEventsSQL string

//go:embed sql/job_get.sql
var jobGetSQL string

//go:embed sql/job_insert.sql
var jobInsertSQL string

//go:embed sql/job_set_state.sql
var jobSetStateSQL string

//go:embed sql/job_stamp.sql
var jobStampSQL string

//go:embed sql/job_list_feed.sql
var jobListFeedSQL string

//go:embed sql/job_scan_bound.sql
var jobScanBoundSQL string

//go:embed sql/job_list_newest.sql
var jobListNewestSQL string

//go:embed sql/job_list_oldest.sql
var jobListOldestSQL string

//go:embed sql/job_take.sql
var jobTakeSQL string

//go:embed sql/journal_mode.sql
var journalModeSQL string

//go:embed sql/key_by_prefix.sql
var keyByPrefixSQL string

//go:embed sql/key_create.sql
var keyCreateSQL string

//go:embed sql/key_list.sql
var keyListSQL string

//go:embed sql/key_revoke.sql
var keyRevokeSQL string

//go:embed sql/leader_attempt.sql
var leaderAttemptSQL string

//go:embed sql/leader_resign.sql
var leaderResignSQL string

//go:embed sql/lease_checkpoint.sql
var leaseCheckpointSQL string

//go:embed sql/lease_heartbeat.sql
var leaseHeartbeatSQL string

//go:embed sql/lease_progress.sql
var leaseProgressSQL string

//go:embed sql/lock_expired.sql
var lockExpiredSQL string

//go:embed sql/lock_held.sql
var lockHeldSQL string

//go:embed sql/outcome_accepted.sql
var outcomeAcceptedSQL string

//go:embed sql/lock_timed_out.sql
var lockTimedOutSQL string

//go:embed sql/migration_applied.sql
var migrationAppliedSQL string

//go:embed sql/schema_table.sql
var schemaTableSQL string

//go:embed sql/schema_version.sql
var schemaVersionSQL string

//go:embed sql/migration_record.sql
var migrationRecordSQL string

//go:embed sql/migrations_create.sql
var migrationsCreateSQL string

//go:embed sql/prune_jobs.sql
var pruneJobsSQL string

//go:embed sql/prune_queue_jobs.sql
var pruneQueueJobsSQL string

//go:embed sql/queue_counts.sql
var queueCountsSQL string

//go:embed sql/queue_purge_jobs.sql
var queuePurgeJobsSQL string

//go:embed sql/queue_set_paused.sql
var queueSetPausedSQL string

//go:embed sql/queue_settings.sql
var queueSettingsSQL string

//go:embed sql/set_state_if_running.sql
var setStateIfRunningSQL string

//go:embed sql/worker_create.sql
var workerCreateSQL string

//go:embed sql/worker_delete.sql
var workerDeleteSQL string

//go:embed sql/worker_delete_keys.sql
var workerDeleteKeysSQL string

//go:embed sql/worker_get.sql
var workerGetSQL string

//go:embed sql/worker_list.sql
var workerListSQL string

//go:embed sql/worker_mark_offline.sql
var workerMarkOfflineSQL string

//go:embed sql/worker_seen.sql
var workerSeenSQL string

//go:embed sql/worker_set_disabled.sql
var workerSetDisabledSQL string

//go:embed sql/webhook_create.sql
var webhookCreateSQL string

//go:embed sql/webhook_get.sql
var webhookGetSQL string

//go:embed sql/webhook_list.sql
var webhookListSQL string

//go:embed sql/webhook_update.sql
var webhookUpdateSQL string

//go:embed sql/webhook_delete.sql
var webhookDeleteSQL string

//go:embed sql/webhook_limits_delete.sql
var webhookLimitsDeleteSQL string

//go:embed sql/webhook_events_take.sql
var webhookEventsTakeSQL string

//go:embed sql/webhook_events_record.sql
var webhookEventsRecordSQL string

//go:embed sql/webhook_events_offline.sql
var webhookEventsOfflineSQL string

//go:embed sql/webhook_limits_lock.sql
var webhookLimitsLockSQL string

//go:embed sql/webhook_limits_select.sql
var webhookLimitsSelectSQL string

//go:embed sql/webhook_limits_save.sql
var webhookLimitsSaveSQL string

//go:embed sql/webhook_limits_due.sql
var webhookLimitsDueSQL string

//go:embed sql/setting_init.sql
var settingInitSQL string

//go:embed sql/setting_get.sql
var settingGetSQL string

//go:embed sql/prune_webhook_events.sql
var pruneWebhookEventsSQL string

//go:embed sql/workflow_insert.sql
var workflowInsertSQL string

//go:embed sql/workflow_lookup.sql
var workflowLookupSQL string

//go:embed sql/task_insert.sql
var taskInsertSQL string

//go:embed sql/edge_insert.sql
var edgeInsertSQL string

//go:embed sql/workflow_reach.sql
var workflowReachSQL string

//go:embed sql/workflow_read.sql
var workflowReadSQL string

//go:embed sql/task_set_state.sql
var taskSetStateSQL string

//go:embed sql/workflow_set.sql
var workflowSetSQL string

//go:embed sql/workflow_event_record.sql
var workflowEventRecordSQL string

//go:embed sql/task_inputs.sql
var taskInputsSQL string

//go:embed sql/workflow_tasks_active.sql
var workflowTasksActiveSQL string

//go:embed sql/workflow_plan.sql
var workflowPlanSQL string

//go:embed sql/workflow_edges.sql
var workflowEdgesSQL string

//go:embed sql/workflow_get.sql
var workflowGetSQL string

//go:embed sql/workflow_tasks.sql
var workflowTasksSQL string

//go:embed sql/workflow_list.sql
var workflowListSQL string

//go:embed sql/workflow_count.sql
var workflowCountSQL string

//go:embed sql/workflow_prune.sql
var workflowPruneSQL string

//go:embed sql/workflow_delete.sql
var workflowDeleteSQL string

//go:embed sql/workflow_delete_edges.sql
var workflowDeleteEdgesSQL string

//go:embed sql/workflow_delete_tasks.sql
var workflowDeleteTasksSQL string

//go:embed sql/step_lease.sql
var stepLeaseSQL string

//go:embed sql/step_get.sql
var stepGetSQL string

//go:embed sql/step_insert.sql
var stepInsertSQL string

//go:embed sql/steps_of.sql
var stepsOfSQL string

//go:embed sql/children_of.sql
var childrenOfSQL string

//go:embed sql/children_pending.sql
var childrenPendingSQL string

//go:embed sql/signal_get.sql
var signalGetSQL string

//go:embed sql/signal_put.sql
var signalPutSQL string

//go:embed sql/signal_deliver.sql
var signalDeliverSQL string

//go:embed sql/signal_wait_of.sql
var signalWaitOfSQL string

//go:embed sql/job_wait.sql
var jobWaitSQL string

//go:embed sql/signal_forget.sql
var signalForgetSQL string

//go:embed sql/children_keys.sql
var childrenKeysSQL string

//go:embed sql/child_adopt.sql
var childAdoptSQL string

//go:embed sql/children_active.sql
var childrenActiveSQL string

//go:embed sql/parent_workflow.sql
var parentWorkflowSQL string

//go:embed sql/workflow_grow.sql
var workflowGrowSQL string
