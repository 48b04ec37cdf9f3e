//! Serialising floats the way upstream's Go master does: a whole number prints as `4`, not `4.0`,
//! so `divisor: 4` comes back as the user wrote it.

use serde::Serializer;

/// `serialize_with` helper for `f64` fields.
pub(crate) fn whole_as_integer<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    // 2^53: beyond it not every integer is representable, so keep the float form.
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    #[derive(Serialize)]
    struct Holder(#[serde(serialize_with = "super::whole_as_integer")] f64);

    #[test]
    fn whole_floats_print_as_integers() {
        assert_eq!(serde_json::to_string(&Holder(4.0)).unwrap(), "4");
        assert_eq!(serde_json::to_string(&Holder(0.25)).unwrap(), "0.25");
        assert_eq!(serde_json::to_string(&Holder(-3.0)).unwrap(), "-3");
    }
}
