//! Task logs, stored as chunks (see [`crate::log_chunk`]): appends number each task's lines from a
//! per-task head row, so lines commit in the order of their numbers; reads select chunks by the
//! columns they share and the cursor, then decode and filter the lines.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args};
use super::{SqlStore, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::log_chunk::{CorruptChunk, LineView, NewLogChunk, decode};
use crate::model::OrderDirection;
use crate::model_logs::{LogFields, LogFilter, LogRecord, NewLogLine};

/// Lines per chunk when grouping single lines ([`SqlStore::insert_logs_impl`]): large enough to
/// make a row's cost negligible per line, small enough that a tail decodes little.
const CHUNK_LINES: usize = 1000;

/// Chunks per `INSERT` statement ([`CHUNK_COLUMNS`] parameters each).
const CHUNKS_PER_STATEMENT: usize = 16;
const CHUNK_COLUMNS: usize = 12;

const CHUNK_INSERT_HEAD: &str = "INSERT INTO task_logs \
    (task_id, first_seq, last_seq, allocation_id, agent_id, container_id, source, min_ts, max_ts, rank_ids, stdtypes, body) VALUES ";

/// Reserves `lines` sequence numbers of the task; returns the last one reserved. The head row
/// stays locked until the transaction ends, so a task's appends commit in sequence order.
const RESERVE_SEQ: &str = "INSERT INTO task_log_heads (task_id, last_seq) VALUES ($1, $2) \
    ON CONFLICT (task_id) DO UPDATE SET last_seq = task_log_heads.last_seq + excluded.last_seq RETURNING last_seq";

/// Chunks read per query: a tail needs one, a long read pages on.
const FIRST_PAGE_CHUNKS: i64 = 2;
const MAX_PAGE_CHUNKS: i64 = 64;

#[derive(sqlx::FromRow)]
struct ChunkRow {
    first_seq: i64,
    last_seq: i64,
    allocation_id: Option<String>,
    agent_id: Option<String>,
    container_id: Option<String>,
    source: Option<String>,
    body: Vec<u8>,
}

/// A chunk ready to append: its lines' numbers are known.
struct Numbered<'a> {
    chunk: &'a NewLogChunk,
    first_seq: i64,
}

impl SqlStore {
    pub(crate) async fn insert_logs_impl(&self, lines: &[NewLogLine]) -> StoreResult<()> {
        // The line itself is stored as bytes (a process may print NUL); the fields beside it are
        // text columns, checked here so one bad line fails only its own batch, never the group
        // commit it would join.
        for line in lines {
            let optional = [("allocation id", &line.allocation_id), ("agent id", &line.agent_id), ("container id", &line.container_id)];
            let more = [("log source", &line.source), ("stdtype", &line.stdtype), ("log level", &line.level)];
            crate::error::StoreError::reject_nul("task id", &line.task_id)?;
            for (field, value) in optional.into_iter().chain(more) {
                if let Some(value) = value {
                    crate::error::StoreError::reject_nul(field, value)?;
                }
            }
        }
        self.insert_log_chunks_impl(group_lines(lines)).await
    }

    /// Appends the chunks; with `legacy_through`, the same transaction deletes the rows of the
    /// previous one-row-per-line table up to that id (the chunks hold them now).
    pub(super) async fn append_chunks(&self, chunks: &[&NewLogChunk], legacy_through: Option<i64>) -> StoreResult<()> {
        // Tasks reserve their numbers in one order (by id), so concurrent appends cannot deadlock.
        let mut per_task: Vec<(&str, i64)> = Vec::new();
        for chunk in chunks.iter().filter(|c| !c.is_empty()) {
            match per_task.iter_mut().find(|(t, _)| *t == chunk.task_id) {
                Some((_, lines)) => *lines += chunk.line_count(),
                None => per_task.push((&chunk.task_id, chunk.line_count())),
            }
        }
        if per_task.is_empty() && legacy_through.is_none() {
            return Ok(());
        }
        per_task.sort_unstable();
        on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            let mut numbered = Vec::with_capacity(chunks.len());
            for (task_id, lines) in &per_task {
                let last: i64 = sqlx::query_scalar(RESERVE_SEQ).bind(*task_id).bind(*lines).fetch_one(&mut *tx).await?;
                let mut next = last - lines + 1;
                for chunk in chunks.iter().filter(|c| !c.is_empty() && c.task_id == *task_id) {
                    numbered.push(Numbered { chunk, first_seq: next });
                    next += chunk.line_count();
                }
            }
            for group in numbered.chunks(CHUNKS_PER_STATEMENT) {
                let sql = insert_sql(group.len());
                let mut query = sqlx::query(AssertSqlSafe(sql));
                for Numbered { chunk, first_seq } in group {
                    let (min_ts, max_ts) = chunk.time_range();
                    query = query
                        .bind(&chunk.task_id)
                        .bind(*first_seq)
                        .bind(first_seq + chunk.line_count() - 1)
                        .bind(&chunk.allocation_id)
                        .bind(&chunk.agent_id)
                        .bind(&chunk.container_id)
                        .bind(&chunk.source)
                        .bind(min_ts)
                        .bind(max_ts)
                        .bind(chunk.rank_ids_json())
                        .bind(chunk.stdtypes_json())
                        .bind(chunk.body());
                }
                query.execute(&mut *tx).await?;
            }
            if let Some(id) = legacy_through {
                sqlx::query("DELETE FROM task_logs_legacy WHERE id <= $1").bind(id).execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    pub(crate) async fn task_logs_impl(&self, task_id: &str, filter: &LogFilter) -> StoreResult<Vec<LogRecord>> {
        let limit = filter.limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(0));
        let mut out = Vec::new();
        let mut cursor = filter.after_id;
        let mut page = FIRST_PAGE_CHUNKS;
        while out.len() < limit {
            let rows = self.chunk_page(task_id, filter, cursor, page).await?;
            let full = rows.len() as i64 == page;
            for row in &rows {
                collect_lines(task_id, row, filter, limit, &mut out)?;
                if out.len() >= limit {
                    break;
                }
            }
            let Some(last) = rows.last() else { break };
            if !full {
                break;
            }
            // The next page starts past every line of the chunks read.
            cursor = Some(match filter.order {
                OrderDirection::Asc => last.last_seq,
                OrderDirection::Desc => last.first_seq,
            });
            page = (page * 4).min(MAX_PAGE_CHUNKS);
        }
        Ok(out)
    }

    /// Up to `count` chunks past `cursor` in the filter's order, pre-selected by the columns
    /// chunks share and by their time range.
    async fn chunk_page(&self, task_id: &str, filter: &LogFilter, cursor: Option<i64>, count: i64) -> StoreResult<Vec<ChunkRow>> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        cond.and(format!("task_id = {}", args.push(task_id)));
        let order = match (filter.order, cursor) {
            (OrderDirection::Asc, Some(after)) => {
                cond.and(format!("last_seq > {}", args.push(after)));
                "last_seq ASC"
            }
            (OrderDirection::Asc, None) => "last_seq ASC",
            (OrderDirection::Desc, Some(before)) => {
                cond.and(format!("first_seq < {}", args.push(before)));
                "first_seq DESC"
            }
            (OrderDirection::Desc, None) => "first_seq DESC",
        };
        cond.and_in(&mut args, "source", &filter.sources);
        cond.and_in(&mut args, "agent_id", &filter.agent_ids);
        cond.and_in(&mut args, "container_id", &filter.container_ids);
        cond.and_in(&mut args, "allocation_id", &filter.allocation_ids);
        if let Some(before) = filter.timestamp_before {
            cond.and(format!("min_ts < {}", args.push(before.timestamp_micros())));
        }
        if let Some(after) = filter.timestamp_after {
            cond.and(format!("max_ts > {}", args.push(after.timestamp_micros())));
        }
        let limit = args.push(count);
        let sql = format!(
            "SELECT first_seq, last_seq, allocation_id, agent_id, container_id, source, body FROM task_logs WHERE {} ORDER BY {order} LIMIT {limit}",
            cond.sql()
        );
        let rows = on_pool!(self, pool => {
            bind_args!(sqlx::query_as::<_, ChunkRow>(AssertSqlSafe(sql.as_str())), args).fetch_all(pool).await?
        });
        Ok(rows)
    }

    pub(crate) async fn task_log_fields_impl(&self, task_id: &str) -> StoreResult<LogFields> {
        type FieldsRow = (Option<String>, Option<String>, Option<String>, Option<String>, String, String);
        let sql = "SELECT DISTINCT allocation_id, agent_id, container_id, source, rank_ids, stdtypes FROM task_logs WHERE task_id = $1";
        let rows: Vec<FieldsRow> = on_pool!(self, pool => sqlx::query_as(sql).bind(task_id).fetch_all(pool).await?);
        let (mut allocations, mut agents, mut containers, mut sources) =
            (BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        let (mut ranks, mut stdtypes) = (BTreeSet::new(), BTreeSet::new());
        for (allocation, agent, container, source, rank_json, stdtype_json) in rows {
            allocations.extend(allocation);
            agents.extend(agent);
            containers.extend(container);
            sources.extend(source);
            ranks.extend(serde_json::from_str::<Vec<i32>>(&rank_json).map_err(|e| StoreError::corrupt("rank_ids", e))?);
            stdtypes.extend(serde_json::from_str::<Vec<String>>(&stdtype_json).map_err(|e| StoreError::corrupt("stdtypes", e))?);
        }
        Ok(LogFields {
            allocation_ids: allocations.into_iter().collect(),
            agent_ids: agents.into_iter().collect(),
            container_ids: containers.into_iter().collect(),
            rank_ids: ranks.into_iter().collect(),
            sources: sources.into_iter().collect(),
            stdtypes: stdtypes.into_iter().collect(),
        })
    }
}

fn insert_sql(rows: usize) -> String {
    let mut sql = String::from(CHUNK_INSERT_HEAD);
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        let first = row * CHUNK_COLUMNS + 1;
        let placeholders: Vec<String> = (first..first + CHUNK_COLUMNS).map(|n| format!("${n}")).collect();
        sql.push('(');
        sql.push_str(&placeholders.join(", "));
        sql.push(')');
    }
    sql
}

/// Runs of consecutive lines that share their chunk columns, at most [`CHUNK_LINES`] each.
pub(super) fn group_lines(lines: &[NewLogLine]) -> Vec<NewLogChunk> {
    let mut chunks: Vec<NewLogChunk> = Vec::new();
    for line in lines {
        let fits = chunks.last().is_some_and(|c| {
            c.len() < CHUNK_LINES
                && c.task_id == line.task_id
                && c.allocation_id == line.allocation_id
                && c.agent_id == line.agent_id
                && c.container_id == line.container_id
                && c.source == line.source
        });
        if !fits {
            chunks.push(NewLogChunk::new(
                line.task_id.clone(),
                line.allocation_id.clone(),
                line.agent_id.clone(),
                line.container_id.clone(),
                line.source.clone(),
            ));
        }
        if let Some(chunk) = chunks.last_mut() {
            chunk.push(line.timestamp, line.rank_id, line.level.as_deref(), line.stdtype.as_deref(), &line.log);
        }
    }
    chunks
}

/// Appends the chunk's lines that pass the filter (in its order, past its cursor) to `out`, up to
/// `limit` lines in all.
fn collect_lines(task_id: &str, row: &ChunkRow, filter: &LogFilter, limit: usize, out: &mut Vec<LogRecord>) -> StoreResult<()> {
    let lines = decode(&row.body).map_err(corrupt_body)?;
    if lines.len() as i64 != row.last_seq - row.first_seq + 1 {
        return Err(corrupt_body(CorruptChunk("line count differs from its sequence range")));
    }
    let numbered = lines.iter().enumerate().map(|(i, l)| (row.first_seq + i as i64, l));
    let mut keep = |(seq, line): (i64, &LineView<'_>)| -> StoreResult<bool> {
        let past_cursor = match (filter.after_id, filter.order) {
            (None, _) => true,
            (Some(after), OrderDirection::Asc) => seq > after,
            (Some(before), OrderDirection::Desc) => seq < before,
        };
        if past_cursor && line_matches(line, filter) {
            out.push(record(task_id, row, seq, line)?);
        }
        Ok(out.len() < limit)
    };
    match filter.order {
        OrderDirection::Asc => {
            for item in numbered {
                if !keep(item)? {
                    break;
                }
            }
        }
        OrderDirection::Desc => {
            for item in numbered.rev() {
                if !keep(item)? {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// The filters on what varies per line (the chunk columns were matched by the query).
fn line_matches(line: &LineView<'_>, filter: &LogFilter) -> bool {
    let listed = |values: &[String], v: Option<&str>| values.is_empty() || v.is_some_and(|v| values.iter().any(|x| x == v));
    listed(&filter.levels, line.level)
        && listed(&filter.stdtypes, line.stdtype)
        && (filter.rank_ids.is_empty() || line.rank_id.is_some_and(|r| filter.rank_ids.contains(&r)))
        && filter.timestamp_before.is_none_or(|t| line.timestamp_us < t.timestamp_micros())
        && filter.timestamp_after.is_none_or(|t| line.timestamp_us > t.timestamp_micros())
        && filter.search_text.as_deref().is_none_or(|text| line.log.contains(text))
}

fn record(task_id: &str, row: &ChunkRow, seq: i64, line: &LineView<'_>) -> StoreResult<LogRecord> {
    let timestamp =
        DateTime::<Utc>::from_timestamp_micros(line.timestamp_us).ok_or_else(|| corrupt_body(CorruptChunk("timestamp out of range")))?;
    Ok(LogRecord {
        id: seq,
        task_id: task_id.to_owned(),
        allocation_id: row.allocation_id.clone(),
        agent_id: row.agent_id.clone(),
        container_id: row.container_id.clone(),
        rank_id: line.rank_id,
        timestamp,
        level: line.level.map(str::to_owned),
        log: line.log.to_owned(),
        source: row.source.clone(),
        stdtype: line.stdtype.map(str::to_owned),
    })
}

fn corrupt_body(e: CorruptChunk) -> StoreError {
    StoreError::Backend(sqlx::Error::ColumnDecode { index: "body".to_owned(), source: Box::new(e) })
}
