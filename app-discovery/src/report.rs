//! [`MetadataReport`]: Dubbo's metadata centre as the application-level consumer reads it — the
//! interface → applications mapping and the `MetadataInfo` of revisions stored `remote` — over
//! any [`registry_core::ConfigCenter`] (ZooKeeper, Nacos config, memory).
//!
//! | | ZooKeeper ([`ReportLayout::Tree`], config centre rooted at `/<group>`) | Nacos config ([`ReportLayout::Nacos`]) |
//! |---|---|---|
//! | mapping of `iface` | node `/dubbo/mapping/<iface>` (group `mapping`, key `iface`) | data id `<iface>`, group `mapping` |
//! | MetadataInfo of `app` at `rev` | node `/dubbo/metadata/<app>/<rev>` (group `metadata`, key `<app>/<rev>`); when absent, dubbo-go's `/dubbo/<app>/<rev>` | data id `<app>`, group `<rev>` |
//!
//! A mapping value is a comma-separated list of application names; readers split on `,`, trim,
//! drop empty items and keep a sorted set ([`parse_apps`]). The metadata centre defaults to the
//! registry address (Dubbo's `useRegistryAsMetadataCenterIfNecessary`).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use registry_core::{ConfigWatch, SharedConfigCenter};

use crate::error::{Error, Result};
use crate::metadata_info::MetadataInfo;

/// The group of mapping entries (`ServiceNameMapping.DEFAULT_MAPPING_GROUP`).
pub const MAPPING_GROUP: &str = "mapping";
/// The ZooKeeper group (tree node) of application metadata.
pub const METADATA_GROUP: &str = "metadata";

/// A set of application names, sorted.
pub type AppSet = Arc<BTreeSet<String>>;

/// Splits a mapping value: comma-separated names, trimmed, empties dropped, sorted.
pub fn parse_apps(text: &str) -> BTreeSet<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// How keys are laid out in the config centre (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportLayout {
    /// ZooKeeper (and memory): `<group>/<key>` nodes under the report root.
    Tree,
    /// Nacos config: the application is the data id, the revision the group.
    Nacos,
}

/// The metadata centre of an application-level consumer.
#[derive(Clone)]
pub struct MetadataReport {
    cc: SharedConfigCenter,
    layout: ReportLayout,
}

impl fmt::Debug for MetadataReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataReport")
            .field("layout", &self.layout)
            .field("store", &self.cc)
            .finish()
    }
}

impl MetadataReport {
    /// A report over `cc` with `layout`. For ZooKeeper, `cc` must be rooted at the report
    /// root (`registry_zk::ZkConfigCenter::connect_with_root(url, &metadata_root(url))`).
    pub fn new(cc: SharedConfigCenter, layout: ReportLayout) -> Self {
        MetadataReport { cc, layout }
    }

    /// The layout.
    pub fn layout(&self) -> ReportLayout {
        self.layout
    }

    /// The key and group of the MetadataInfo of `app` at `revision`.
    pub fn metadata_key(&self, app: &str, revision: &str) -> (String, String) {
        match self.layout {
            ReportLayout::Tree => (format!("{app}/{revision}"), METADATA_GROUP.to_owned()),
            ReportLayout::Nacos => (app.to_owned(), revision.to_owned()),
        }
    }

    /// The applications currently mapped to `interface` (empty when none).
    pub async fn mapping(&self, interface: &str) -> Result<BTreeSet<String>> {
        check_key(interface)?;
        let v = self.cc.get(interface, MAPPING_GROUP).await?;
        Ok(v.as_deref().map(parse_apps).unwrap_or_default())
    }

    /// Watches the applications mapped to `interface`: the current set first, then every
    /// change (an empty set while there is no mapping).
    pub async fn watch_mapping(&self, interface: &str) -> Result<MappingWatch> {
        check_key(interface)?;
        let w = self.cc.watch(interface, MAPPING_GROUP).await?;
        Ok(MappingWatch::config(w))
    }

    /// Adds `app` to the mapping of `interface` (what a provider does after exporting; not an
    /// atomic compare-and-set, for tools and tests).
    pub async fn add_mapping(&self, interface: &str, app: &str) -> Result<()> {
        check_key(interface)?;
        let mut apps = self.mapping(interface).await?;
        if apps.insert(app.to_owned()) {
            let text = apps.into_iter().collect::<Vec<_>>().join(",");
            self.cc.publish(interface, MAPPING_GROUP, &text).await?;
        }
        Ok(())
    }

    /// Replaces the mapping of `interface` with `apps` (an operator's edit; empty deletes it).
    pub async fn set_mapping(&self, interface: &str, apps: &[&str]) -> Result<()> {
        check_key(interface)?;
        if apps.is_empty() {
            self.cc.remove(interface, MAPPING_GROUP).await?;
        } else {
            self.cc
                .publish(interface, MAPPING_GROUP, &apps.join(","))
                .await?;
        }
        Ok(())
    }

    /// The MetadataInfo of `app` at `revision` stored in the report.
    ///
    /// Errors: none stored ([`Error::NoMetadata`], retryable: a provider may write it a
    /// moment after registering), unreadable JSON, the store failing.
    pub async fn app_metadata(&self, app: &str, revision: &str) -> Result<MetadataInfo> {
        check_key(app)?;
        check_key(revision)?;
        let (key, group) = self.metadata_key(app, revision);
        let mut found = self.cc.get(&key, &group).await?;
        if self.layout == ReportLayout::Tree && found.as_deref().is_none_or(is_blank) {
            // dubbo-go's ZooKeeper report (`zookeeperMetadataReport.PublishAppMetadata`)
            // writes `<root>/<app>/<rev>`, without Java's `metadata` node.
            found = self.cc.get(revision, app).await?;
        }
        match found {
            Some(text) if !is_blank(&text) => MetadataInfo::from_json_text(&text),
            _ => Err(Error::NoMetadata {
                app: app.to_owned(),
                revision: revision.to_owned(),
                source_desc: "metadata report".into(),
            }),
        }
    }

    /// Stores `info` as a `remote`-storage provider does.
    pub async fn publish_app_metadata(&self, info: &MetadataInfo) -> Result<()> {
        check_key(&info.app)?;
        check_key(&info.revision)?;
        let (key, group) = self.metadata_key(&info.app, &info.revision);
        self.cc
            .publish(&key, &group, &info.to_json().to_string())
            .await?;
        Ok(())
    }
}

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// Keys become path segments (ZooKeeper) or data ids (Nacos): no empty names, no `/`.
fn check_key(k: &str) -> Result<()> {
    if k.is_empty() || k.contains('/') || k == "." || k == ".." {
        return Err(Error::malformed(
            "key",
            format!("{k:?} cannot be a metadata report key"),
        ));
    }
    Ok(())
}

/// The applications mapped to one interface, as a watcher sees them: the current set first,
/// then each change, in order.
#[derive(Debug)]
pub struct MappingWatch {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Config(ConfigWatch),
    Fixed(Option<AppSet>),
}

impl MappingWatch {
    /// A watch over a config-centre key holding a mapping value.
    pub fn config(w: ConfigWatch) -> Self {
        MappingWatch {
            kind: Kind::Config(w),
        }
    }

    /// A set that never changes (`provided-by`, `subscribed-services`).
    pub fn fixed(apps: BTreeSet<String>) -> Self {
        MappingWatch {
            kind: Kind::Fixed(Some(Arc::new(apps))),
        }
    }

    /// The next set; `None` when the source is gone.
    pub async fn next(&mut self) -> Option<AppSet> {
        match &mut self.kind {
            Kind::Config(w) => {
                let v = w.next().await?;
                Some(Arc::new(v.as_deref().map(parse_apps).unwrap_or_default()))
            }
            Kind::Fixed(first) => match first.take() {
                Some(s) => Some(s),
                None => std::future::pending().await,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry_core::MemoryConfigCenter;

    #[test]
    fn parse_rules() {
        let s = parse_apps(" b, a,,a ,c ");
        assert_eq!(s.into_iter().collect::<Vec<_>>(), vec!["a", "b", "c"]);
        assert!(parse_apps("").is_empty());
    }

    #[tokio::test]
    async fn mapping_and_metadata_over_a_config_centre() {
        let cc = Arc::new(MemoryConfigCenter::new());
        let r = MetadataReport::new(cc.clone(), ReportLayout::Tree);
        let mut w = r.watch_mapping("com.foo.S").await.unwrap();
        assert!(w.next().await.unwrap().is_empty());
        r.add_mapping("com.foo.S", "b").await.unwrap();
        r.add_mapping("com.foo.S", "a").await.unwrap();
        use registry_core::ConfigCenter;
        assert_eq!(
            cc.get("com.foo.S", MAPPING_GROUP).await.unwrap().as_deref(),
            Some("a,b")
        );
        let got = w.next().await.unwrap();
        assert!(got.contains("a"));
        let info = MetadataInfo::new("a", "r1", [crate::ServiceInfo::new("com.foo.S", "dubbo")]);
        assert!(matches!(
            r.app_metadata("a", "r1").await,
            Err(Error::NoMetadata { .. })
        ));
        r.publish_app_metadata(&info).await.unwrap();
        assert!(cc.get("a/r1", METADATA_GROUP).await.unwrap().is_some());
        assert_eq!(r.app_metadata("a", "r1").await.unwrap(), info);
        let n = MetadataReport::new(cc.clone(), ReportLayout::Nacos);
        n.publish_app_metadata(&info).await.unwrap();
        assert!(cc.get("a", "r1").await.unwrap().is_some());
        assert!(r.app_metadata("a/b", "r1").await.is_err());
    }

    #[tokio::test]
    async fn dubbo_go_zookeeper_layout_is_read_when_java_s_is_absent() {
        use registry_core::ConfigCenter;
        let cc = Arc::new(MemoryConfigCenter::new());
        let r = MetadataReport::new(cc.clone(), ReportLayout::Tree);
        let info = MetadataInfo::new("a", "r2", [crate::ServiceInfo::new("com.foo.S", "dubbo")]);
        // `<root>/a/r2`: group `a`, key `r2`.
        cc.publish("r2", "a", &info.to_json().to_string())
            .await
            .unwrap();
        assert_eq!(r.app_metadata("a", "r2").await.unwrap(), info);
        // Java's node wins when both exist.
        let java = MetadataInfo::new("a", "r2", [crate::ServiceInfo::new("com.foo.T", "tri")]);
        r.publish_app_metadata(&java).await.unwrap();
        assert_eq!(r.app_metadata("a", "r2").await.unwrap(), java);
        // The Nacos layout has no such fallback.
        let n = MetadataReport::new(cc, ReportLayout::Nacos);
        assert!(matches!(
            n.app_metadata("a", "r3").await,
            Err(Error::NoMetadata { .. })
        ));
    }
}
