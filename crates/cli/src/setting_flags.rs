//! `det master run --db-host ...`: one command-line flag per master setting.
//!
//! The flags are generated from the master's own settings table, so a setting added there is
//! immediately settable from the command line; nothing is listed twice.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

use resolute_master::config::SETTINGS;

/// The setting flags given on the command line, as `(setting path, raw value)` pairs in the form
/// `MasterConfig::load` takes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SettingOverrides(pub Vec<(&'static str, String)>);

impl FromArgMatches for SettingOverrides {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut overrides = Vec::new();
        for setting in SETTINGS {
            // Each arg's id is the setting path, which is unique in the table.
            if let Ok(Some(value)) = matches.try_get_one::<String>(setting.path) {
                overrides.push((setting.path, value.clone()));
            }
        }
        Ok(SettingOverrides(overrides))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for SettingOverrides {
    fn augment_args(cmd: Command) -> Command {
        SETTINGS.iter().fold(cmd, |cmd, setting| {
            cmd.arg(
                Arg::new(setting.path)
                    .long(setting.flag())
                    .value_name("VALUE")
                    .action(ArgAction::Set)
                    .help(setting.help)
                    .help_heading("Settings (override the config file and DET_* variables)"),
            )
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// The `--flag` that sets the setting at `path`, if the master has such a setting.
pub fn flag_for(path: &str) -> Option<String> {
    SETTINGS.iter().find(|s| s.path == path).map(|s| format!("--{}", s.flag()))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Probe {
        #[command(flatten)]
        settings: SettingOverrides,
    }

    #[test]
    fn every_setting_gets_a_flag() {
        for setting in SETTINGS {
            let flag = flag_for(setting.path).expect("flag");
            let probe = Probe::try_parse_from(["x", flag.as_str(), "v"]).expect(&flag);
            assert_eq!(probe.settings.0, vec![(setting.path, "v".to_owned())]);
        }
        let probe = Probe::try_parse_from(["x"]).expect("no flags");
        assert!(probe.settings.0.is_empty());
        assert!(Probe::try_parse_from(["x", "--no-such-setting", "1"]).is_err());
    }
}
