//! Directories and paths. A directory has no data blocks: every inode names
//! its parent directory and its own name component (`layout.rs`), and the
//! file system keeps an index (parent, name) -> inode, built at mount and
//! changed with every namespace change, so resolving a path costs its depth
//! (a B-tree lookup per component) and listing a directory its entries.

use crate::inode::{Inode, Kind};
use crate::layout::{NAME_MAX, ROOT, STEP_PAGES_MAX};
use crate::{FileClass, Fs, FsError, Ino, Result};

/// One entry of a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub ino: Ino,
    pub is_dir: bool,
    /// Bytes (0 for a directory), with non-transactional changes.
    pub size: u64,
}

/// The components of `path` (a leading `/` is allowed; the root has none).
fn components(path: &str) -> Result<Vec<&str>> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<&str> = rest.split('/').collect();
    for c in &parts {
        if c.len() > NAME_MAX {
            return Err(FsError::NameTooLong(path.into()));
        }
        if c.is_empty() || *c == "." || *c == ".." || c.contains('\0') {
            return Err(FsError::InvalidName(path.into()));
        }
    }
    Ok(parts)
}

impl Fs {
    /// The directory `parts` names, walking down from the root.
    fn walk(&self, parts: &[&str]) -> Result<Ino> {
        let mut dir = ROOT;
        for (i, c) in parts.iter().enumerate() {
            let prefix = || parts[..=i].join("/");
            let &ino = self.names.get(&(dir, c.to_string())).ok_or_else(|| FsError::NotFound(prefix()))?;
            if !self.view(None, ino).is_some_and(|i| i.is_dir()) {
                return Err(FsError::NotADirectory(prefix()));
            }
            dir = ino;
        }
        Ok(dir)
    }

    /// The existing directory that holds `path`, and `path`'s last component.
    pub(crate) fn parent_of<'p>(&self, path: &'p str) -> Result<(Ino, &'p str)> {
        let parts = components(path)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Err(FsError::Exists("/".into())); // the root
        };
        Ok((self.walk(dirs)?, name))
    }

    /// The inode `path` names (a file or a directory; `""` or `/`: the root).
    pub fn resolve(&self, path: &str) -> Result<Ino> {
        let parts = components(path)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Ok(ROOT);
        };
        let dir = self.walk(dirs)?;
        self.names
            .get(&(dir, name.to_string()))
            .copied()
            .ok_or_else(|| FsError::NotFound(path.into()))
    }

    /// The inode `path` names, if any (a file or a directory).
    pub fn lookup(&self, path: &str) -> Option<Ino> {
        self.resolve(path).ok()
    }

    /// Is inode `ino` a directory?
    pub fn is_dir(&self, ino: Ino) -> Result<bool> {
        Ok(self.inode(None, ino)?.is_dir())
    }

    /// A new inode in directory `parent`: durable when this returns.
    pub(crate) fn new_inode(&mut self, parent: Ino, name: &str, kind: Kind, class: FileClass) -> Result<Ino> {
        self.make_room(None, STEP_PAGES_MAX)?;
        // The lowest free inode no context has pending changes to (a delete
        // whose commit failed is still pending).
        let ino = self
            .free_inodes
            .iter()
            .copied()
            .find(|&ino| self.owner(ino).is_none())
            .ok_or(FsError::NoInodes {
                count: self.layout.inode_count,
            })?;
        *self.inode_mut(None, ino)? = Inode {
            kind,
            class: if kind == Kind::File { class as u8 } else { 0 },
            parent,
            name: name.into(),
            ..Inode::default()
        };
        self.names.insert((parent, name.into()), ino);
        self.make_plain_durable()?;
        Ok(ino)
    }

    /// Creates a directory in an existing one; durable when this returns.
    pub fn mkdir(&mut self, path: &str) -> Result<Ino> {
        let (parent, name) = self.parent_of(path)?;
        if self.names.contains_key(&(parent, name.to_string())) {
            return Err(FsError::Exists(path.into()));
        }
        let ino = self.new_inode(parent, name, Kind::Dir, FileClass::Other)?;
        self.host_log(|_| Ok(crate::hostlog::Record::Mkdir { path: path.into() }))?;
        Ok(ino)
    }

    /// Removes an empty directory; durable when this returns.
    pub fn rmdir(&mut self, path: &str) -> Result<()> {
        let ino = self.resolve(path)?;
        if ino == ROOT {
            return Err(FsError::InvalidName(path.into()));
        }
        if !self.inode(None, ino)?.is_dir() {
            return Err(FsError::NotADirectory(path.into()));
        }
        if self.first_entry(ino).is_some() {
            return Err(FsError::NotEmpty(path.into()));
        }
        self.make_room(None, STEP_PAGES_MAX)?;
        let (parent, name) = {
            let inode = self.inode(None, ino)?;
            (inode.parent, inode.name.clone())
        };
        *self.inode_mut(None, ino)? = Inode::default();
        self.names.remove(&(parent, name));
        self.make_plain_durable()?;
        self.host_log(|_| Ok(crate::hostlog::Record::Rmdir { path: path.into() }))
    }

    fn first_entry(&self, dir: Ino) -> Option<Ino> {
        self.names
            .range((dir, String::new())..)
            .next()
            .filter(|((parent, _), _)| *parent == dir)
            .map(|(_, &ino)| ino)
    }

    /// The entries of directory `path`, by name.
    pub fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let dir = self.resolve(path)?;
        if !self.inode(None, dir)?.is_dir() {
            return Err(FsError::NotADirectory(path.into()));
        }
        Ok(self
            .names
            .range((dir, String::new())..)
            .take_while(|((parent, _), _)| *parent == dir)
            .map(|((_, name), &ino)| {
                let inode = self.view(None, ino).expect("an indexed inode");
                DirEntry {
                    name: name.clone(),
                    ino,
                    is_dir: inode.is_dir(),
                    size: inode.size,
                }
            })
            .collect())
    }

    /// The path of inode `ino` from the root (without a leading `/`).
    pub fn path_of(&self, ino: Ino) -> Result<String> {
        let mut parts = Vec::new();
        let mut at = ino;
        // At most one step per inode: a cycle cannot pass mount's checks, but
        // a walk is bounded anyway.
        for _ in 0..self.layout.inode_count {
            if at == ROOT {
                parts.reverse();
                return Ok(parts.join("/"));
            }
            let inode = self.inode(None, at)?;
            parts.push(inode.name.clone());
            at = inode.parent;
        }
        Err(FsError::Format(format!("inode {ino}: its directories form a cycle")))
    }

    /// Paths and sizes of every file (as committed, with non-transactional
    /// changes), in index order (by directory, then name).
    pub fn list(&self) -> Vec<(String, u64)> {
        self.names
            .values()
            .filter_map(|&ino| {
                let inode = self.view(None, ino)?;
                (!inode.is_dir()).then(|| Some((self.path_of(ino).ok()?, inode.size)))?
            })
            .collect()
    }
}
