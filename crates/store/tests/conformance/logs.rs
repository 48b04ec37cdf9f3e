use resolute_store::{LogFields, LogFilter, LogRecord, NewLogChunk, NewLogLine, OrderDirection, Store};

use crate::fixtures::at;

/// Line `i` of a task, with every filterable attribute varying with `i`.
pub fn log_line(task_id: &str, i: i64) -> NewLogLine {
    let level = match i % 7 {
        0 => Some("LOG_LEVEL_ERROR"),
        1 | 2 => Some("LOG_LEVEL_WARNING"),
        6 => None,
        _ => Some("LOG_LEVEL_INFO"),
    };
    NewLogLine {
        task_id: task_id.to_owned(),
        allocation_id: Some(format!("{task_id}.{}", 1 + i / 5000)),
        agent_id: Some(format!("agent-{}", i % 2)),
        container_id: Some(format!("container-{}", i % 3)),
        rank_id: if i % 10 == 9 { None } else { Some((i % 4) as i32) },
        timestamp: at(i),
        level: level.map(String::from),
        log: format!("[rank={}] line {i:05} {} of the training loop, 100% done_\n", i % 4, if i % 100 == 0 { "Needle" } else { "hay" }),
        source: Some(if i % 11 == 0 { "master" } else { "task" }.to_owned()),
        stdtype: Some(if i % 3 == 0 { "stderr" } else { "stdout" }.to_owned()),
    }
}

pub async fn batch_insert_and_follow(store: &dyn Store) {
    const LINES: i64 = 10_000;
    let lines: Vec<_> = (0..LINES).map(|i| log_line("task-a", i)).collect();
    store.insert_logs(&lines).await.unwrap();
    store.insert_logs(&(0..100).map(|i| log_line("task-b", i)).collect::<Vec<_>>()).await.unwrap();
    store.insert_logs(&[]).await.unwrap();

    // Follow: pages of 1000 from the last id seen, until a page comes back empty.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.task_logs("task-a", &LogFilter { after_id: cursor, limit: Some(1000), ..Default::default() }).await.unwrap();
        let Some(last) = page.last() else { break };
        assert!(page.len() <= 1000);
        cursor = Some(last.id);
        seen.extend(page);
    }
    assert_eq!(seen.len(), LINES as usize);
    assert!(seen.windows(2).all(|w| w[0].id < w[1].id), "ids increase in insertion order");
    for (record, line) in seen.iter().zip(&lines).step_by(997) {
        assert_eq!(
            (&record.task_id, &record.allocation_id, &record.agent_id, &record.container_id, record.rank_id),
            (&line.task_id, &line.allocation_id, &line.agent_id, &line.container_id, line.rank_id)
        );
        assert_eq!((record.timestamp, &record.level, &record.log), (line.timestamp, &line.level, &line.log));
        assert_eq!((&record.source, &record.stdtype), (&line.source, &line.stdtype));
    }
    // A follower at the end sees only what comes next.
    store.insert_logs(&[log_line("task-a", LINES)]).await.unwrap();
    let next = store.task_logs("task-a", &LogFilter { after_id: cursor, ..Default::default() }).await.unwrap();
    assert_eq!(next.iter().map(|l| l.log.clone()).collect::<Vec<_>>(), [log_line("task-a", LINES).log]);

    // Tail: newest first, then older from the cursor.
    let tail = LogFilter { order: OrderDirection::Desc, limit: Some(3), ..Default::default() };
    let newest = store.task_logs("task-a", &tail).await.unwrap();
    let texts = |records: &[resolute_store::LogRecord]| records.iter().map(|r| r.log.clone()).collect::<Vec<_>>();
    assert_eq!(texts(&newest), [log_line("task-a", 10_000).log, lines[9999].log.clone(), lines[9998].log.clone()]);
    let older = LogFilter { after_id: Some(newest[2].id), ..tail };
    assert_eq!(
        texts(&store.task_logs("task-a", &older).await.unwrap()),
        [lines[9997].log.clone(), lines[9996].log.clone(), lines[9995].log.clone()]
    );
    assert_eq!(store.task_logs("task-b", &LogFilter::default()).await.unwrap().len(), 100);
    assert!(store.task_logs("task-c", &LogFilter::default()).await.unwrap().is_empty());
}

pub async fn every_filter_selects_matching_lines(store: &dyn Store) {
    let lines: Vec<_> = (0..10_000).map(|i| log_line("task-f", i)).collect();
    store.insert_logs(&lines).await.unwrap();
    store.insert_logs(&(0..50).map(|i| log_line("other", i)).collect::<Vec<_>>()).await.unwrap();

    let check = |name: &'static str, filter: LogFilter, keep: &dyn Fn(&NewLogLine) -> bool| {
        let expected: Vec<String> = lines.iter().filter(|l| keep(l)).map(|l| l.log.clone()).collect();
        async move {
            let got: Vec<String> = store.task_logs("task-f", &filter).await.unwrap().into_iter().map(|r| r.log).collect();
            assert!(!expected.is_empty() && expected.len() < 10_000, "{name}: a selective filter");
            assert_eq!(got.len(), expected.len(), "{name}");
            assert_eq!(got, expected, "{name}");
        }
    };
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let levels = strings(&["LOG_LEVEL_ERROR", "LOG_LEVEL_WARNING"]);
    check("levels", LogFilter { levels: levels.clone(), ..Default::default() }, &|l| l.level.as_ref().is_some_and(|v| levels.contains(v)))
        .await;
    check("stdtypes", LogFilter { stdtypes: strings(&["stderr"]), ..Default::default() }, &|l| l.stdtype.as_deref() == Some("stderr"))
        .await;
    check("sources", LogFilter { sources: strings(&["master"]), ..Default::default() }, &|l| l.source.as_deref() == Some("master")).await;
    check("rank_ids", LogFilter { rank_ids: vec![0, 3], ..Default::default() }, &|l| matches!(l.rank_id, Some(0 | 3))).await;
    check("agent_ids", LogFilter { agent_ids: strings(&["agent-1"]), ..Default::default() }, &|l| l.agent_id.as_deref() == Some("agent-1"))
        .await;
    let containers = strings(&["container-0", "container-2"]);
    check("container_ids", LogFilter { container_ids: containers.clone(), ..Default::default() }, &|l| {
        l.container_id.as_ref().is_some_and(|c| containers.contains(c))
    })
    .await;
    check("allocation_ids", LogFilter { allocation_ids: strings(&["task-f.2"]), ..Default::default() }, &|l| {
        l.allocation_id.as_deref() == Some("task-f.2")
    })
    .await;
    check("timestamp_before", LogFilter { timestamp_before: Some(at(1234)), ..Default::default() }, &|l| l.timestamp < at(1234)).await;
    check("timestamp_after", LogFilter { timestamp_after: Some(at(8765)), ..Default::default() }, &|l| l.timestamp > at(8765)).await;
    check("search_text", LogFilter { search_text: Some("Needle".into()), ..Default::default() }, &|l| l.log.contains("Needle")).await;
    let none = |text: &str| LogFilter { search_text: Some(text.into()), ..Default::default() };
    assert!(store.task_logs("task-f", &none("needle")).await.unwrap().is_empty(), "search text is case-sensitive");
    assert!(store.task_logs("task-f", &none("1_0")).await.unwrap().is_empty(), "no LIKE wildcards in search text");
    assert_eq!(store.task_logs("task-f", &none("100% done_")).await.unwrap().len(), 10_000);

    // Filters combine, and page with a cursor.
    let combined = LogFilter {
        levels: levels.clone(),
        stdtypes: strings(&["stdout"]),
        timestamp_after: Some(at(5000)),
        limit: Some(5),
        ..Default::default()
    };
    let keep = |l: &&NewLogLine| {
        l.level.as_ref().is_some_and(|v| levels.contains(v)) && l.stdtype.as_deref() == Some("stdout") && l.timestamp > at(5000)
    };
    let expected: Vec<_> = lines.iter().filter(keep).map(|l| l.log.clone()).collect();
    let first = store.task_logs("task-f", &combined).await.unwrap();
    let second = store.task_logs("task-f", &LogFilter { after_id: Some(first[4].id), ..combined.clone() }).await.unwrap();
    let got: Vec<_> = first.iter().chain(&second).map(|r| r.log.clone()).collect();
    assert_eq!(got, expected[..10]);
}

/// `count` lines of the task in one chunk, numbered from `from` in their text.
fn chunk(task_id: &str, from: i64, count: i64, agent: &str) -> NewLogChunk {
    let mut chunk =
        NewLogChunk::new(task_id.into(), Some(format!("{task_id}.1")), Some(agent.into()), Some("c".into()), Some("task".into()));
    for i in from..from + count {
        let level = if i % 5 == 0 { "LOG_LEVEL_ERROR" } else { "LOG_LEVEL_INFO" };
        let stdtype = if i % 2 == 0 { "stdout" } else { "stderr" };
        chunk.push(at(i), Some((i % 3) as i32), Some(level), Some(stdtype), &format!("line {i}\n"));
    }
    chunk
}

fn numbers(records: &[LogRecord]) -> Vec<i64> {
    records.iter().map(|r| r.log.trim_end().trim_start_matches("line ").parse::<i64>().unwrap()).collect()
}

pub async fn reads_cross_chunk_boundaries(store: &dyn Store) {
    // Chunks of uneven sizes, including single lines and a gap of another task between them.
    let sizes = [1, 7, 1000, 3, 250, 1, 1];
    let mut from = 0;
    for (n, size) in sizes.iter().enumerate() {
        store.insert_log_chunks(vec![chunk("task-x", from, *size, &format!("agent-{}", n % 2))]).await.unwrap();
        store.insert_log_chunks(vec![chunk("task-y", from, 2, "agent-0")]).await.unwrap();
        from += size;
    }
    let total = from;
    let all = store.task_logs("task-x", &LogFilter::default()).await.unwrap();
    assert_eq!(numbers(&all), (0..total).collect::<Vec<_>>());
    assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), (1..=total).collect::<Vec<_>>(), "ids number the task's lines");

    // Pages of 4 ascending and descending meet every line once, in order.
    for order in [OrderDirection::Asc, OrderDirection::Desc] {
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page =
                store.task_logs("task-x", &LogFilter { after_id: cursor, order, limit: Some(4), ..Default::default() }).await.unwrap();
            let Some(last) = page.last() else { break };
            cursor = Some(last.id);
            seen.extend(numbers(&page));
        }
        let mut expected: Vec<i64> = (0..total).collect();
        if order == OrderDirection::Desc {
            expected.reverse();
        }
        assert_eq!(seen, expected, "{order:?}");
    }

    // A tail whose lines span three chunks (1, 1 and 250 lines), then older lines from its cursor.
    let tail = LogFilter { order: OrderDirection::Desc, limit: Some(5), ..Default::default() };
    let newest = store.task_logs("task-x", &tail).await.unwrap();
    assert_eq!(numbers(&newest), [total - 1, total - 2, total - 3, total - 4, total - 5]);
    let older = store.task_logs("task-x", &LogFilter { after_id: Some(newest[4].id), ..tail.clone() }).await.unwrap();
    assert_eq!(numbers(&older), [total - 6, total - 7, total - 8, total - 9, total - 10]);

    // Per-line filters with a limit, resumed from a cursor in the middle of a chunk.
    let errors_rank_0 = LogFilter { levels: vec!["LOG_LEVEL_ERROR".into()], rank_ids: vec![0], limit: Some(3), ..Default::default() };
    let first = store.task_logs("task-x", &errors_rank_0).await.unwrap();
    assert_eq!(numbers(&first), [0, 15, 30]);
    let next = store.task_logs("task-x", &LogFilter { after_id: Some(first[2].id), ..errors_rank_0.clone() }).await.unwrap();
    assert_eq!(numbers(&next), [45, 60, 75]);
    let desc = LogFilter { order: OrderDirection::Desc, ..errors_rank_0 };
    let expected_last: Vec<i64> = (0..total).rev().filter(|i| i % 15 == 0).take(3).collect();
    assert_eq!(numbers(&store.task_logs("task-x", &desc).await.unwrap()), expected_last);

    // Time bounds inside chunks, the agent (a chunk column) and text search together.
    let window = LogFilter {
        timestamp_after: Some(at(5)),
        timestamp_before: Some(at(1010)),
        agent_ids: vec!["agent-1".into()],
        search_text: Some("line 10".into()),
        ..Default::default()
    };
    // Lines 1..=7 come from agent-1 (chunk 1), 8..=1007 from agent-0, 1008..=1010 from agent-1.
    assert_eq!(numbers(&store.task_logs("task-x", &window).await.unwrap()), [1008, 1009]);

    // Following from the last line sees only what is appended next.
    let cursor = LogFilter { after_id: all.last().map(|r| r.id), ..Default::default() };
    assert!(store.task_logs("task-x", &cursor).await.unwrap().is_empty());
    store.insert_log_chunks(vec![chunk("task-x", total, 2, "agent-0")]).await.unwrap();
    let appended = store.task_logs("task-x", &cursor).await.unwrap();
    assert_eq!((numbers(&appended), appended[0].id), (vec![total, total + 1], total + 1));

    let fields = store.task_log_fields("task-x").await.unwrap();
    assert_eq!(fields.agent_ids, ["agent-0", "agent-1"]);
    assert_eq!(
        (fields.allocation_ids, fields.container_ids, fields.sources),
        (vec!["task-x.1".to_owned()], vec!["c".to_owned()], vec!["task".to_owned()])
    );
    assert_eq!((fields.rank_ids, fields.stdtypes), (vec![0, 1, 2], vec!["stderr".to_owned(), "stdout".to_owned()]));
    assert_eq!(store.task_log_fields("task-none").await.unwrap(), LogFields::default());
}

pub async fn concurrent_appends_keep_each_batch_whole_and_in_order(store: &dyn Store) {
    let append = |n: i64| store.insert_log_chunks(vec![chunk("task-c", n * 1000, 100, "a"), chunk("task-d", n * 1000, 10, "a")]);
    let results = tokio::join!(append(0), append(1), append(2), append(3), append(4), append(5), append(6), append(7));
    for r in [results.0, results.1, results.2, results.3, results.4, results.5, results.6, results.7] {
        r.unwrap();
    }
    for (task, per_append) in [("task-c", 100), ("task-d", 10)] {
        let lines = store.task_logs(task, &LogFilter::default()).await.unwrap();
        assert_eq!(lines.iter().map(|r| r.id).collect::<Vec<_>>(), (1..=8 * per_append).collect::<Vec<_>>());
        // Each append's lines are consecutive and in order; appends may land in any order.
        let starts: Vec<i64> = numbers(&lines)
            .chunks(per_append as usize)
            .map(|c| {
                assert_eq!(c, (c[0]..c[0] + per_append).collect::<Vec<_>>());
                c[0]
            })
            .collect();
        let mut sorted = starts.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).map(|n| n * 1000).collect::<Vec<_>>());
    }
}
