/* sdcflow: Great Expectations Data Docs without a network.
 *
 * GE's pages load bootstrap-table, Font Awesome, a date picker and Vega from CDNs. sdcflow
 * replaces those tags with Bootstrap and jQuery copied next to the pages, and this file: a
 * minimal stand-in for bootstrap-table that renders the tables GE builds from embedded
 * data (the index page's lists of validations and suites) as plain sortable-free tables,
 * rows linking to their pages; filters and search are not offered. Vega charts are not
 * drawn (sdcflow's expectations render none).
 */
(function ($) {
  if (!$ || $.fn.bootstrapTable) { return; }
  $.fn.bootstrapTable = function (options) {
    if (typeof options !== "object" || !options.columns) { return this; }
    var columns = options.columns, data = options.data || [];
    return this.each(function () {
      var table = $(this).addClass("table table-sm table-hover");
      var head = $("<thead>"), row = $("<tr>");
      columns.forEach(function (c) { row.append($("<th>").text(c.title || c.field)); });
      table.empty().append(head.append(row));
      var body = $("<tbody>");
      data.forEach(function (item) {
        var tr = $("<tr>");
        columns.forEach(function (c) {
          // GE renders these cells itself (links, icons, escaped names): keep its markup
          tr.append($("<td>").html(item[c.field] === undefined ? "" : String(item[c.field])));
        });
        if (item._table_row_link_path) {
          tr.attr("data-href", item._table_row_link_path).css("cursor", "pointer");
          tr.on("click", function () { table.trigger("click-row.bs.table", [item, tr]); });
        }
        body.append(tr);
      });
      table.append(body);
    });
  };
}(window.jQuery));
window.vegaEmbed = window.vegaEmbed || function (el) {
  var node = document.querySelector(el);
  if (node) { node.textContent = "(chart not drawn: Data Docs are rendered offline)"; }
  return Promise.resolve();
};
