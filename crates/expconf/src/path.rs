//! Field paths (`searcher.max_length.batches`, `bind_mounts[0].host_path`) that every error and
//! warning carries, so a user can find the offending line without reading our code.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A location in the config tree. Cheap enough to clone per field: configs are small.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<Segment>);

impl FieldPath {
    /// The whole document.
    pub fn root() -> Self {
        Self::default()
    }

    /// The path of `key` inside this mapping.
    pub fn key(&self, key: &str) -> Self {
        let mut segments = self.0.clone();
        segments.push(Segment::Key(key.to_string()));
        Self(segments)
    }

    /// The path of item `index` inside this list.
    pub fn index(&self, index: usize) -> Self {
        let mut segments = self.0.clone();
        segments.push(Segment::Index(index));
        Self(segments)
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("<config>");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if i == 0 => write!(f, "{key}")?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_keys_with_dots_and_indices_with_brackets() {
        let path = FieldPath::root().key("bind_mounts").index(0).key("host_path");
        assert_eq!(path.to_string(), "bind_mounts[0].host_path");
        assert_eq!(FieldPath::root().key("searcher").key("max_length").key("batches").to_string(), "searcher.max_length.batches");
    }

    #[test]
    fn root_has_a_readable_name() {
        assert_eq!(FieldPath::root().to_string(), "<config>");
        assert!(FieldPath::root().is_root());
    }
}
