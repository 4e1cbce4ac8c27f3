//! LaTeX writers: MINT's tables.tex (the same tables as tables.md, from the same table models,
//! as tabulars).

use super::mint::{k5_table, table2, table3, Tables};
use super::table::latex_document;

/// tables.tex: Table 2, Table 3 and the three k = 5 tables as LaTeX tabulars.
pub fn mint_tables(tables: &Tables) -> String {
    let t2 = table2(tables);
    let t3 = table3(tables);
    let k5: Vec<_> = (0..3).map(|pick| k5_table(tables, pick)).collect();
    latex_document("MINT tables", &[&t2, &t3, &k5[0], &k5[1], &k5[2]])
}
