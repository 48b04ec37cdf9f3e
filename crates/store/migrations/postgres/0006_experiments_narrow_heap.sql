-- Experiment rows carry their configs (about 2 KB) inline, so counting or paging the list
-- scanned ~2 KB a row (10,000 experiments: a 20 MB heap, ~10 ms for COUNT(*) under load).
-- With a low TOAST target the wide columns move out of line and the heap keeps ~170 bytes a
-- row; only the page being returned reads them. Rows written before this migration move on
-- their next update. (PostgreSQL only: SQLite counts through its smallest index.)
ALTER TABLE experiments SET (toast_tuple_target = 128);
