#![allow(non_snake_case)]
#[path = "../../host/abi.rs"]
pub mod abi;
