//! `bind_mounts`: host directories mounted into every trial container.

use serde::Serialize;

use crate::read::{Ctx, Field, Fields, quote};
use crate::storage::PROPAGATIONS;

/// One entry of `bind_mounts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BindMount {
    pub host_path: String,
    pub container_path: String,
    pub read_only: bool,
    pub propagation: String,
}

/// Reads `bind_mounts`, reporting every bad entry.
pub(crate) fn read_bind_mounts(ctx: &mut Ctx, field: Option<Field<'_>>) -> Vec<BindMount> {
    let Some(field) = field else { return Vec::new() };
    field.items(ctx).iter().filter_map(|item| read_bind_mount(ctx, item)).collect()
}

fn read_bind_mount(ctx: &mut Ctx, field: &Field<'_>) -> Option<BindMount> {
    let mut fields = Fields::of(ctx, field)?;
    let host_path = fields.require(ctx, "host_path", "the absolute path on the agent, e.g. /data").and_then(|f| {
        let path = f.non_empty_string(ctx)?;
        if !path.starts_with('/') {
            ctx.invalid(&f.path, quote(&path), "host_path must be an absolute path");
            return None;
        }
        Some(path)
    });
    let container_path = fields.require(ctx, "container_path", "where it appears in the container, e.g. /data").and_then(|f| {
        let path = f.non_empty_string(ctx)?;
        if path == "." {
            ctx.invalid(&f.path, quote(&path), "container_path must not be \".\" (the working directory holds the model code)");
            return None;
        }
        Some(path)
    });
    let read_only = fields.bool_or(ctx, "read_only", false);
    let propagation = fields.take("propagation").and_then(|f| f.choice(ctx, PROPAGATIONS)).unwrap_or("rprivate");
    fields.finish(ctx);
    Some(BindMount { host_path: host_path?, container_path: container_path?, read_only, propagation: propagation.to_string() })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::path::FieldPath;
    use crate::read::Mode;

    fn read(value: Value) -> (Vec<BindMount>, Vec<String>) {
        let mut ctx = Ctx::new(Mode::Complete);
        let mounts = read_bind_mounts(&mut ctx, Some(Field::new(&value, FieldPath::root().key("bind_mounts"))));
        (mounts, ctx.errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn defaults_read_only_and_propagation() {
        let (mounts, errors) = read(json!([{"host_path": "/data", "container_path": "/data"}]));
        assert!(errors.is_empty());
        assert_eq!(
            mounts[0],
            BindMount { host_path: "/data".into(), container_path: "/data".into(), read_only: false, propagation: "rprivate".into() }
        );
    }

    #[test]
    fn reports_every_bad_entry_by_index() {
        let (_, errors) = read(json!([{"host_path": "data", "container_path": "."}, {"container_path": "/x"}]));
        assert_eq!(
            errors,
            [
                "bind_mounts[0].host_path: host_path must be an absolute path (found \"data\")",
                "bind_mounts[0].container_path: container_path must not be \".\" (the working directory holds the model code) (found \".\")",
                "bind_mounts[1].host_path: required but missing (the absolute path on the agent, e.g. /data)",
            ]
        );
    }
}
