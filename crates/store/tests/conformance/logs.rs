use resolute_store::{LogFilter, NewLogLine, OrderDirection, Store};

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
