//! `det template|tpl`: config templates (upstream's `cli/template.py`).

use std::path::{Path, PathBuf};

use clap::Subcommand;
use resolute_api::templates::{
    DeleteTemplateResponse, GetTemplateResponse, GetTemplatesResponse, PatchTemplateConfigResponse, PostTemplateResponse, Template,
};
use serde_json::{Map, Value};

use super::Globals;
use super::wire::connect;
use crate::client::{ClientError, path_segment};
use crate::error::CliError;
use crate::log_stream::green;
use crate::output::tabulate_or_csv;
use crate::table::Cell;
use crate::{render, say};

#[derive(Debug, Subcommand)]
pub enum TemplateCommand {
    /// list config templates
    #[command(visible_alias = "ls")]
    List {
        /// show the configuration body
        #[arg(short, long)]
        details: bool,
    },
    /// set config template (create it, or replace its config)
    Set {
        /// template name
        template_name: String,
        /// config template file (.yaml)
        template_file: PathBuf,
    },
    /// create config template
    Create {
        /// template name
        template_name: String,
        /// config template file (.yaml)
        template_file: PathBuf,
    },
    /// set template attributes
    SetValue {
        #[command(subcommand)]
        what: SetValueCommand,
    },
    /// describe config template
    Describe {
        /// template name
        template_name: String,
    },
    /// remove config template
    #[command(visible_aliases = ["rm", "delete"])]
    Remove {
        /// template name
        template_name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SetValueCommand {
    /// update config template
    Config {
        /// template name
        template_name: String,
        /// config template file (.yaml)
        template_file: PathBuf,
    },
}

pub fn run(g: &Globals, cmd: Option<TemplateCommand>) -> Result<(), CliError> {
    match cmd.unwrap_or(TemplateCommand::List { details: false }) {
        TemplateCommand::List { details } => list(g, details),
        TemplateCommand::Describe { template_name } => {
            let client = connect(g)?;
            let path = format!("api/v1/templates/{}", path_segment(&template_name));
            let template = client.get::<GetTemplateResponse>(&path)?.template;
            // Upstream `print`s the YAML dump, which already ends in a newline.
            say!("{}", render::yaml(&template.config));
            Ok(())
        }
        TemplateCommand::Set { template_name, template_file } => {
            let config = read_template(&template_file)?;
            let client = connect(g)?;
            let path = format!("api/v1/templates/{}", path_segment(&template_name));
            match client.get::<GetTemplateResponse>(&path) {
                Ok(_) => client.patch::<_, PatchTemplateConfigResponse>(&path, &config).map(drop)?,
                Err(ClientError::NotFound(_)) => {
                    let body = Template { name: template_name.clone(), config, workspace_id: 0 };
                    client.post::<_, PostTemplateResponse>(&path, &body).map(drop)?
                }
                Err(e) => return Err(e.into()),
            }
            say!("{}", green(&format!("Set template {template_name}")));
            Ok(())
        }
        TemplateCommand::Create { template_name, template_file } => {
            let config = read_template(&template_file)?;
            let client = connect(g)?;
            let body = Template { name: template_name.clone(), config, workspace_id: 0 };
            client.post::<_, PostTemplateResponse>(&format!("api/v1/templates/{}", path_segment(&template_name)), &body)?;
            say!("{}", green(&format!("Created template {template_name}")));
            Ok(())
        }
        TemplateCommand::SetValue { what: SetValueCommand::Config { template_name, template_file } } => {
            let config = read_template(&template_file)?;
            let client = connect(g)?;
            client.patch::<_, PatchTemplateConfigResponse>(&format!("api/v1/templates/{}", path_segment(&template_name)), &config)?;
            say!("{}", green(&format!("Updated template {template_name}")));
            Ok(())
        }
        TemplateCommand::Remove { template_name } => {
            let client = connect(g)?;
            client.delete::<DeleteTemplateResponse>(&format!("api/v1/templates/{}", path_segment(&template_name)))?;
            say!("{}", green(&format!("Removed template {template_name}")));
            Ok(())
        }
    }
}

/// `list_template`: name and workspace (and with `-d` the config as YAML).
fn list(g: &Globals, details: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let templates = client.get::<GetTemplatesResponse>("api/v1/templates")?.templates;
    let names = super::ntsc::workspace_names(&client)?;
    if g.json {
        say!("{}", render::json(&templates));
        return Ok(());
    }
    let rows: Vec<Vec<Cell>> = templates
        .iter()
        .map(|t| {
            let workspace = names.get(&t.workspace_id).cloned().unwrap_or_else(|| "missing workspace".to_owned());
            let mut row: Vec<Cell> = vec![t.name.clone().into(), workspace.into()];
            if details {
                row.push(render::yaml(&t.config).into());
            }
            row
        })
        .collect();
    let headers: &[&str] = if details { &["Name", "Workspace", "Config"] } else { &["Name", "Workspace"] };
    tabulate_or_csv(headers, &rows, false);
    Ok(())
}

/// The template file: a YAML mapping.
fn read_template(path: &Path) -> Result<Value, CliError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| CliError::msg(format!("cannot read template file {shown}: {e}")))?;
    let value: Option<Value> = serde_norway::from_str(&text).map_err(|e| CliError::msg(format!("invalid template file {shown}: {e}")))?;
    match value {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(Value::Object(map)) => Ok(Value::Object(map)),
        Some(_) => Err(CliError::msg(format!("invalid template file {shown}: expected a mapping of config keys"))),
    }
}
