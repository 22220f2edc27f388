//! `txftl reproduce xftl`, as a user runs it (at the hidden test size, for
//! debug builds): the JSON of REPRODUCE.md, every experiment present, and
//! checks computed from the measured figures, not copied from the paper.

mod common;

use common::txftl;
use serde_json::Value;

fn within(paper: f64, measured: f64) -> bool {
    if paper == 0.0 {
        return measured == 0.0;
    }
    paper.signum() == measured.signum() && (measured / paper - 1.0).abs() <= 0.25
}

#[test]
fn reproduce_xftl_json_has_the_papers_figures_and_checks_from_measurements() {
    let (code, out, err) = txftl(&["reproduce", "xftl", "--tiny", "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    for key in ["paper", "params", "figures", "checks"] {
        assert!(!r[key].is_null(), "missing {key}");
    }
    let params = &r["params"];
    assert!(!params["scaled_down"].as_array().unwrap().is_empty(), "says what was scaled down");
    let tx = params["transactions"].as_f64().unwrap();
    let f = &r["figures"];
    // Figure 5 at 30, 50 and 70% validity, every mode at every K.
    let fig5 = f["figure5"].as_array().unwrap();
    assert_eq!(
        fig5.iter().map(|x| x["validity_pct"].as_u64().unwrap()).collect::<Vec<_>>(),
        [30, 50, 70]
    );
    for v in fig5 {
        assert_eq!(v["runs"].as_array().unwrap().len(), 3 * params["ks"].as_array().unwrap().len());
        for run in v["runs"].as_array().unwrap() {
            assert_eq!(run["integrity"], "ok");
        }
    }
    // Table 5: every cut in every mode; TPC-C: the paper's four mixes on three modes.
    let cuts = params["restart_cuts"].as_u64().unwrap() as usize;
    assert!(cuts >= 5);
    assert_eq!(f["table5"]["runs"].as_array().unwrap().len(), 3 * cuts);
    let tpcc = f["tpcc"].as_array().unwrap();
    let mixes: Vec<&str> = tpcc.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(mixes, ["write", "read", "selection", "join"]);
    assert_eq!(tpcc[1]["mix"], serde_json::json!([5, 0, 50, 0, 45]), "read-intensive, Table 3");
    for m in tpcc {
        for run in m["runs"].as_array().unwrap() {
            assert_eq!(run["consistency"], "ok");
        }
    }
    // Every check has the fields of REPRODUCE.md, and within_25pct follows
    // from paper and measured.
    let checks = r["checks"].as_array().unwrap();
    assert!(checks.len() >= 30, "{} checks", checks.len());
    for c in checks {
        for key in ["id", "what", "paper", "measured", "unit", "kind", "within_25pct", "note"] {
            assert!(!c[key].is_null(), "check {} lacks {key}", c["id"]);
        }
        let ok = c["within_25pct"].as_bool().unwrap();
        match c["kind"].as_str().unwrap() {
            "value" => assert_eq!(
                ok,
                within(c["paper"].as_f64().unwrap(), c["measured"].as_f64().unwrap()),
                "{}",
                c["id"]
            ),
            "order" => assert_eq!(ok, c["paper"] == c["measured"], "{}", c["id"]),
            k => panic!("kind {k}"),
        }
    }
    let check = |id: &str| checks.iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no check {id}"));
    // The paper's column is the paper's; the measured one is ours, from the figures.
    assert_eq!(check("table1.rbj.host_writes")["paper"], 29439.0);
    let t1 = fig5.iter().find(|v| v["validity_pct"] == 50).unwrap()["runs"].as_array().unwrap();
    let xftl = t1.iter().find(|r| r["mode"] == "xftl" && r["k"] == 5).unwrap();
    let fsyncs = xftl["host"]["fsyncs"].as_f64().unwrap() * 1000.0 / tx;
    assert_eq!(check("table1.xftl.fsyncs")["measured"].as_f64().unwrap(), fsyncs);
    let w = &tpcc[0]["runs"].as_array().unwrap();
    let tpm = |mode: &str| {
        let x = w.iter().find(|x| x["mode"] == mode).unwrap();
        x["units"].as_f64().unwrap() * 60.0 / x["elapsed_s"].as_f64().unwrap()
    };
    let gain = 100.0 * (tpm("xftl") / tpm("wal") - 1.0);
    let measured = check("table4.write.xftl_over_wal")["measured"].as_f64().unwrap();
    assert!((measured - gain).abs() < 1e-6, "{measured} vs {gain}");
    assert_eq!(check("table4.write.xftl_over_wal")["unit"], "percent");
}

#[test]
fn reproduce_lighttx_json_has_every_figure_and_checks_from_measurements() {
    let (code, out, err) = txftl(&["reproduce", "lighttx", "--tiny", "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    for key in ["paper", "params", "figures", "checks", "deviations"] {
        assert!(!r[key].is_null(), "missing {key}");
    }
    let params = &r["params"];
    assert!(!params["scaled_down"].as_array().unwrap().is_empty(), "says what was scaled down");
    let f = &r["figures"];
    // The trace was recorded in the run, from a consistent TPC-C database.
    let w = &f["workload"];
    assert_eq!(w["consistency"], "ok");
    assert!(w["device_transactions"].as_u64().unwrap() > 0);
    let mean = w["tx_pages_mean"].as_f64().unwrap();
    assert!(mean > 1.0 && mean <= w["tx_pages_max"].as_f64().unwrap(), "{mean}");
    // The paper's protocols the registry has, at the levels it says each offers.
    let protocols = params["protocols"].as_array().unwrap();
    let levels = |p: &str| -> Vec<String> {
        protocols
            .iter()
            .find(|x| x["protocol"] == p)
            .unwrap_or_else(|| panic!("{p} not run"))["levels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(levels("lighttx"), ["strict", "no-page-conflict", "serializable"]);
    assert_eq!(levels("atomic-write"), ["strict"]);
    assert!(!levels("scc").contains(&"serializable".to_string()));
    let runs = f["runs"].as_array().unwrap();
    let zone0 = params["zone_blocks_default"].as_u64().unwrap();
    let find = |p: &str, level: &str, abort: u64| {
        runs.iter().find(|x| {
            x["protocol"] == p && x["isolation"] == level && x["abort_pct"] == abort && (p != "lighttx" || x["zone_blocks"] == zone0)
        })
    };
    let aborts: Vec<u64> = params["abort_pcts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap())
        .collect();
    for p in protocols {
        let name = p["protocol"].as_str().unwrap();
        for level in p["levels"].as_array().unwrap() {
            assert!(find(name, level.as_str().unwrap(), 0).is_some(), "{name} {level}");
        }
        for level in ["strict", "no-page-conflict", "serializable"] {
            if !p["levels"].as_array().unwrap().iter().any(|l| l == level) {
                assert!(find(name, level, 0).is_none(), "{name} ran {level}, which it does not offer");
            }
        }
        for &a in &aborts {
            let x = find(name, "strict", a).unwrap_or_else(|| panic!("{name} at {a}%"));
            assert!(x["tx_per_sim_s"].as_f64().unwrap() > 0.0);
        }
    }
    assert!(f["failed"].as_array().unwrap().is_empty(), "{}", f["failed"]);
    // Fig. 8: a recovery per zone size for LightTx, one for each other protocol.
    let rec = f["recovery"].as_array().unwrap();
    let zones = params["zone_blocks"].as_array().unwrap().len();
    assert_eq!(rec.iter().filter(|x| x["protocol"] == "lighttx").count(), zones);
    assert_eq!(rec.len(), zones + protocols.len() - 1);
    for x in rec {
        assert!(x["recovery_s"].as_f64().unwrap() > 0.0, "{}", x["protocol"]);
    }
    // Every check has REPRODUCE.md's fields, within_25pct follows from the
    // numbers, and the measured column is computed from the figures.
    let checks = r["checks"].as_array().unwrap();
    assert!(checks.len() >= 15, "{} checks", checks.len());
    for c in checks {
        for key in ["id", "what", "paper", "measured", "unit", "kind", "within_25pct", "note"] {
            assert!(!c[key].is_null(), "check {} lacks {key}", c["id"]);
        }
        let ok = c["within_25pct"].as_bool().unwrap();
        match c["kind"].as_str().unwrap() {
            "value" => assert_eq!(
                ok,
                within(c["paper"].as_f64().unwrap(), c["measured"].as_f64().unwrap()),
                "{}",
                c["id"]
            ),
            "order" => assert_eq!(ok, c["paper"] == c["measured"], "{}", c["id"]),
            k => panic!("kind {k}"),
        }
        if !ok {
            assert!(!c["note"].as_str().unwrap().is_empty(), "check {} misses with no note", c["id"]);
        }
    }
    let check = |id: &str| checks.iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no check {id}"));
    assert_eq!(check("trace.tx_pages_mean")["paper"], 27.2);
    assert_eq!(check("trace.tx_pages_mean")["measured"].as_f64().unwrap(), mean);
    let t = |level: &str| find("lighttx", level, 0).unwrap()["tx_per_sim_s"].as_f64().unwrap();
    let gain = 100.0 * (t("serializable") / t("strict") - 1.0);
    let measured = check("fig5.lighttx.serializable_vs_strict")["measured"].as_f64().unwrap();
    assert!((measured - gain).abs() < 1e-9, "{measured} vs {gain}");
    assert_eq!(check("fig5.lighttx.serializable_vs_strict")["unit"], "percent");
    let aw = find("atomic-write", "strict", 0).unwrap();
    let m = &aw["measured"];
    let ratio = 100.0
        * (m["map_writes"].as_f64().unwrap() + m["superblock_writes"].as_f64().unwrap() + m["protocol_meta_writes"].as_f64().unwrap())
        / m["host_writes"].as_f64().unwrap();
    assert!((check("fig9.atomic_write_pct")["measured"].as_f64().unwrap() - ratio).abs() < 1e-9);
    // Atomic-Write persists its mappings at every commit: one page each at least.
    assert!(m["protocol_meta_writes"].as_u64().unwrap() >= aw["commits"].as_u64().unwrap());
}

#[test]
fn reproduce_refuses_papers_not_done_yet() {
    let (code, _, err) = txftl(&["reproduce", "mobius", "--quick"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not implemented"), "{err}");
}
