//! The saved run types: what a run writes and every reader of runs reads back. Writers
//! (`check`, `node`) and readers (`compare`, `store`, `merge`, `report`) share them; this layer
//! imports nothing above the findings on host facts. Their schema tags are in `tags`, at the
//! ground, since the scan and doctor reports carry one too.

pub mod check;
pub mod judgement;
pub mod node;
