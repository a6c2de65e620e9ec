//! Integration tests, built as one binary.

mod defective;
mod support;

mod catalogue;
mod determinism;
mod emulation;
mod families;
mod frameworks;
mod fuzzing;
mod html;
mod http_limits;
mod init;
mod junit;
mod layering;
mod msrv;
mod mutants;
mod output;
mod process;
mod properties;
mod pytest_plugin;
mod record;
mod reliability;
mod rules;
mod scenario_errors;
mod schema;
mod sdk_node;
mod sdk_python;
mod sdk_rust;
mod serve;
mod settings;
mod sharding;
mod snapshot_runs;
mod surface;
mod upstream;
mod vitest_helper;
mod wiremock_plugin;
