"""Everything decided before a flow run exists: the spec checked against the source, the
edit rules parsed and checked, the runner and the destinations checked (:mod:`.plan`,
:mod:`.runner`). A problem a user can fix is one ``InputError`` before anything is written.
"""
