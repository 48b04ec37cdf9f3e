//! Protobuf enums travel by name (`STATE_ACTIVE`). [`wire_enum!`] declares such an enum once:
//! the serde names, `name()`, `from_name()` and `ALL` all come from the same list, so the wire
//! names cannot drift from what the master stores or compares.

/// Declares a wire enum: `wire_enum! { /// doc\n pub enum State { Active = "STATE_ACTIVE", } }`.
/// The names are `tt`, not `literal`: a `literal` fragment reaches derive macros wrapped in an
/// invisible group, which utoipa's `#[serde(rename)]` reader skips, so the OpenAPI document
/// published the variant names (`Active`) instead of the wire's (`STATE_ACTIVE`).
macro_rules! wire_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:tt,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The name on the wire.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }

            /// The value with this wire name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($wire => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

pub(crate) use wire_enum;
